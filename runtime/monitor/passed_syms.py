"""Numbers that vary, passed on to a function the monitor steps into.

``scaled(logits, t)``, ``self.head(h, temperature)``, and a root function behind a
library decorator (``@torch.no_grad()`` runs torch's wrapper first, which hands
its arguments on): the callee's parameter holds the very object the caller
passed, and its symbol (the expression the number follows) goes with it, so the
callee's arithmetic is lifted into the graph instead of guarded by value.

A parameter gets a symbol only where its binding is unambiguous: exactly one of
the operands the caller handed is that object (identity), the parameter did not
take its default, and the callee was called directly (from the caller's frame,
or through torch's module call or a decorator's wrapper, which pass arguments
on unchanged).  Everything else keeps today's rule: the caller's leftover
symbols are guarded by value when its call returns.
"""

from __future__ import annotations

import inspect
import types
from typing import Any

from fullgraph.runtime import cpython
from fullgraph.runtime.sources import ArgSource, KwargSource
from fullgraph.runtime.symbolic.scalars import Leaf, Sym

# Library frames that pass their arguments on unchanged to the program's callee.
_PASS_THROUGH = frozenset(["_call_impl", "_wrapped_call_impl", "decorate_context"])


def parameters(code: types.CodeType) -> tuple[str, ...]:
    """The names a call binds: positional and keyword-only parameters, in order."""
    return code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]


def bind(frame: types.FrameType, handed: list[tuple[Any, Sym | None]]) -> dict[int, Sym]:
    """Symbols for ``frame``'s parameters, by fast-local index, from ``handed`` (the
    operands the call passed: (object, its symbol or None))."""
    code = frame.f_code
    defaults = _defaults(frame)
    found: dict[int, Sym] = {}
    for index, name in enumerate(parameters(code)):
        if name in code.co_cellvars or name not in frame.f_locals:
            continue  # a cell (a closure reads it): guarded by value
        value = frame.f_locals[name]
        if any(value is default for default in defaults):
            continue
        same = [sym for obj, sym in handed if obj is value]
        if len(same) == 1 and same[0] is not None:
            found[index] = same[0]
    return found


def hooks_see_arguments(run: Any) -> bool:
    """Whether forward hooks of the compiled module (its own or global ones) get the
    call's arguments: they read them out of a tuple torch builds, where no symbol
    follows (``out * args[1]``), or hand ``forward`` others (a pre-hook's
    ``max(t, 1.0)``).  Such calls keep their numbers guarded by value."""
    module = run.module
    if module is None:
        return False
    from torch.nn.modules import module as torch_module

    return bool(
        module._forward_pre_hooks
        or module._forward_hooks
        or torch_module._global_forward_pre_hooks
        or torch_module._global_forward_hooks
    )


def from_root(run: Any, frame: types.FrameType) -> dict[int, Sym]:
    """The first frame the monitor steps into, when the compiled callable is a library
    wrapper of it (``@torch.no_grad()``): the root's varying arguments, handed on."""
    if hooks_see_arguments(run):
        return {}
    back = frame.f_back
    if back is None or not _passes_through(back):
        return {}
    handed: list[tuple[Any, Sym | None]] = []
    sources = [*(ArgSource(i) for i in range(len(run.args))), *map(KwargSource, run.kwargs)]
    for source, value in zip(sources, (*run.args, *run.kwargs.values())):
        symbolic = source in run.symbolic_sources
        handed.append((value, Leaf(value, source=source) if symbolic else None))
    found = bind(frame, handed)
    for sym in found.values():
        run.symbolic_taken.add(sym.source)
    return found


def hand_back(run: Any, state: Any, value: Any, sym: Sym) -> bool:
    """A callee returns a number that varies (``lr = get_lr(step)``): hand its symbol
    to the caller's call instruction (which takes it when the value it gets is this
    very object).  False: no caller frame called this one directly."""
    if type(value) not in (int, float) or len(run.frames) < 2 or run.frames[-1] is not state:
        return False
    caller = run.frames[-2]
    if state.frame.f_code.co_flags & _GENERATOR_FLAGS:
        return False  # a generator's return value is no call's result
    if not called_directly(state.frame, caller.frame):
        return False
    if caller.returned is not None:
        run.concretize(caller.returned[1])
    caller.returned = (value, sym)
    return True


_GENERATOR_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


def called_directly(frame: types.FrameType, caller: types.FrameType) -> bool:
    """Whether ``frame`` was called by ``caller`` itself or through pass-through frames."""
    back = frame.f_back
    while back is not None and back is not caller:
        if not _passes_through(back):
            return False
        back = back.f_back
    return back is caller


def _passes_through(frame: types.FrameType) -> bool:
    """torch's module call or context-manager decorator, handing its arguments on."""
    module = frame.f_globals.get("__name__", "")
    return frame.f_code.co_name in _PASS_THROUGH and str(module).startswith("torch.")


def _defaults(frame: types.FrameType) -> tuple:
    function = _function_of(frame)
    if function is None:
        return ()
    return (*(function.__defaults__ or ()), *(function.__kwdefaults__ or {}).values())


def _function_of(frame: types.FrameType) -> Any:
    function = cpython.frame_function(frame)
    return function if inspect.isfunction(function) else None
