"""What the guard checks of a module that is called, by the program or by a library.

``module(x)`` runs torch's ``Module.__call__``: the global and the module's own
hooks, then ``forward`` looked up on the instance and its class.  A forward of
the program's is stepped into, so what it reads is guarded as it runs; a torch
layer's runs unobserved, so its settings are guarded here on its behalf
(``library_layers.py``).

A module handed to a library function the monitor does not step into is
called there: ``torch.func.functional_call(m, params, x)``,
``torch.utils.checkpoint.checkpoint(m, x)``, ``checkpoint_sequential``.  The
same is guarded for it, so ``m.eval()`` or a child swapped between calls is a
miss rather than a replay of the old mode.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any

import torch

from fullgraph.runtime.monitor import hook_sources, layer_state, library_layers
from fullgraph.runtime.monitor.user_code import has_user_forward, is_user_code
from fullgraph.runtime.sources import Source


def guard_called_module(run: Any, module: torch.nn.Module, source: Source) -> Callable[[], None]:
    """``module`` is called: guard what its ``__call__`` and forward depend on; returns
    the check to run afterwards for the stores torch code made while it ran."""
    # ``_call_impl`` looks forward up: a replaced one is another call.
    run.read_class_attribute(module, source, "forward")
    if has_user_forward(module):
        # Its forward is stepped into, so what it reads (self.training included) is
        # guarded as it runs; __call__ itself runs its hooks.
        hook_sources.guard_hooks(run, module, source)
    else:
        library_layers.guard_library_module(run, module, source)
    # Stores made by torch code while it runs (weight_norm's hook setting
    # module.weight) are replayed like the program's own.
    return layer_state.watch(run, module, whole_tree=not has_user_forward(module))


def guard_pathless_module(run: Any, module: torch.nn.Module) -> Callable[[], None] | None:
    """A module called with no path to it.  One the call made is the call's own, but a
    torch layer runs its children unobserved, and those may be layers from outside
    (``nn.Sequential(*list(net.children())[:-1])(x)``): each is guarded as a called
    module through its own path.  One from outside, reached through code the monitor
    does not see (a copy a library function made), has settings no guard can read: the
    record is refused rather than replaying them as they were."""
    if id(module) not in run.made_objects:
        run.refuse(
            f"{type(module).__name__} was reached through code the monitor does not see: "
            "its settings and state have no path a guard could check"
        )
        return None
    if has_user_forward(module):
        return None  # stepped into: the children it calls are calls the monitor sees
    afters = []
    for child in module._modules.values():
        if child is None:
            continue
        source = run.source_of(child)
        if source is not None:
            afters.append(guard_called_module(run, child, source))
        else:
            after = guard_pathless_module(run, child)
            if after is not None:
                afters.append(after)
    return _all_of(afters)


def _all_of(afters: list) -> Callable[[], None] | None:
    if not afters:
        return None

    def after_all() -> None:
        for after in afters:
            after()

    return after_all


def guard_handed_modules(run: Any, fn: Any, args: tuple, kwargs: dict) -> Callable | None:
    """``fn`` is library Python the monitor does not step into: the modules it is handed
    (not the module whose method it is) are guarded as called ones."""
    if isinstance(fn, functools.partial):  # transformers' ``_gradient_checkpointing_func``
        fn, args, kwargs = fn.func, (*fn.args, *args), {**fn.keywords, **kwargs}
    target = fn.__func__ if isinstance(fn, types.MethodType) else fn
    if not isinstance(target, types.FunctionType) or is_user_code(target.__code__):
        return None
    if isinstance(getattr(fn, "__self__", None), torch.nn.Module):
        return None  # ``m.train()``, ``m.to(...)``: the module's own methods
    if (
        args
        and isinstance(args[0], torch.nn.Module)
        and (getattr(type(args[0]), target.__name__, None) is target)
    ):
        return None  # the same, called on its class (``nn.Module.train(m)``)
    afters = []
    if target in _checkpoints():
        afters.append(_recompute_check(run, args, kwargs))
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.nn.Module):
            source = run.source_of(value)
            if source is not None:
                hook_sources.guard_global_hooks(run)
                afters.append(guard_called_module(run, value, source))
    return _all_of(afters)


def _checkpoints() -> tuple:
    from torch.utils import checkpoint

    return (checkpoint.checkpoint, checkpoint.checkpoint_sequential)


def _recompute_check(run: Any, args: tuple, kwargs: dict) -> Callable[[], None]:
    """Activation checkpointing runs the function again during the backward pass: a
    buffer it updates in place (batch norm's running statistics) is updated twice in
    eager, once by a replay, whose graph keeps the activations instead."""
    modules = []
    for value in (*args, *kwargs.values()):
        owner = getattr(value, "__self__", value)  # ``checkpoint(self.block, x)``
        if isinstance(owner, torch.nn.Module):
            modules.append(owner)
    buffers = [b for m in modules for b in m.buffers()]
    versions = [b._version for b in buffers]
    grad = torch.is_grad_enabled()
    effects, callouts = run.effects_made, len(run.tape.callouts)

    def after() -> None:
        if grad and any(b._version != v for b, v in zip(buffers, versions)):
            run.refuse(
                "torch.utils.checkpoint recomputes a function that updates buffers in "
                "place (batch norm statistics) during the backward pass"
            )
        elif grad and (
            run.effects_made != effects or any(c.effectful for c in run.tape.callouts[callouts:])
        ):
            # A counter, a print, a hook's store: eager makes them again in the backward.
            run.refuse("torch.utils.checkpoint recomputes a function with effects")

    return after


# Layers whose forward takes a fused "fast path" in inference (nested tensors for
# padded batches), which torch skips whenever a torch-function mode is active, as the
# monitor's is: captured, they would compute the slow path's numbers (padded
# positions are not zero, the others differ in the last bits).
_FAST_PATH_LAYERS = (
    torch.nn.MultiheadAttention,
    torch.nn.TransformerEncoderLayer,
    torch.nn.TransformerEncoder,
)


def takes_fast_path(module: Any) -> bool:
    """A layer that may take its fast path: in eval mode, autocast off, and no gradient
    to track through its weights (torch checks the rest)."""
    return (
        isinstance(module, _FAST_PATH_LAYERS)
        and not module.training
        and not any(torch.is_autocast_enabled(device) for device in ("cpu", "cuda"))
        and not (torch.is_grad_enabled() and any(p.requires_grad for p in module.parameters()))
    )


def without_torch_function(layer: torch.nn.Module) -> Callable:
    """``layer`` called as eager calls it, with no torch-function mode in sight (the
    monitoring run's); a replay calls the layer itself, from the mock, where none is."""

    def call(*args: Any, **kwargs: Any) -> Any:
        with torch._C.DisableTorchFunction():
            return layer(*args, **kwargs)

    return call


def chained(first: Callable[[], None], second: Callable | None) -> Callable[[], None]:
    """One after-phase running ``first`` then ``second`` (when there is one)."""

    def both() -> None:
        first()
        if second is not None:
            second()

    return both
