"""Sources for the hooks a module's ``__call__`` runs around its forward.

Torch's ``Module._call_impl`` finds the hooks in dicts keyed by handle id
(``module._forward_hooks``, ``module._forward_pre_hooks`` and the global ones
in ``torch.nn.modules.module``) and calls them; the hooks themselves are user
code, stepped into.  Without a source for the hook, what it reaches through
itself (its closure cells, a bound method's ``__self__``, a callable object's
attributes, a ``functools.partial``'s arguments) has none either: its reads
would go unguarded and its writes would be left out of the mock.  Each hook is
read here through its slot, ``module._forward_hooks[<id>]`` (identity guarded:
a hook removed, or registered again under a new id, misses the guard), and
everything it carries gets sources through that path the usual way.

Backward hooks are left alone: they run when autograd runs them, which a
replay does for real.
"""

from __future__ import annotations

import functools
import types
from typing import Any

import torch

from fullgraph.runtime.monitor import library_settings
from fullgraph.runtime.monitor.user_code import is_user_code
from fullgraph.runtime.sources import (
    AttrSource,
    ConstSource,
    HooksSource,
    ItemSource,
    Source,
    TypeOfSource,
    module_hooks,
)

_FORWARD_HOOK_DICTS = ("_forward_pre_hooks", "_forward_hooks")
_GLOBAL_FORWARD_HOOK_DICTS = ("_global_forward_pre_hooks", "_global_forward_hooks")


def guard_hooks(run: Any, module: torch.nn.Module, source: Source) -> None:
    """``module`` is called: which hooks it runs (by identity), and a source for each
    forward hook and pre-hook it (and every module call) runs."""
    run.read(HooksSource(source), module_hooks(module), symbolic=False)
    for name in _FORWARD_HOOK_DICTS:
        hooks = getattr(module, name, None)
        if hooks:
            _read_hooks(run, hooks, AttrSource(source, name))
    guard_global_hooks(run)


def guard_global_hooks(run: Any) -> None:
    """A module is called (one with a source or not): the global forward hooks and
    pre-hooks it runs get sources."""
    import torch.nn.modules.module as module_py

    owner = None
    for name in _GLOBAL_FORWARD_HOOK_DICTS:
        hooks = getattr(module_py, name, None)
        if hooks:  # (GlobalHooksSource, read at the start of every run, has them all)
            owner = owner or ConstSource(run.globals_name(vars(module_py)))
            _read_hooks(run, hooks, ItemSource(owner, name))


def _read_hooks(run: Any, hooks: dict, dict_source: Source) -> None:
    for handle_id, hook in list(hooks.items()):
        if not isinstance(handle_id, int):
            continue  # not a handle id torch made: no path to render
        run.read(ItemSource(dict_source, handle_id), hook, symbolic=False)
        source = run.source_of(hook)  # this slot's, or the path it was reached by before
        if source is None:
            continue
        if isinstance(hook, functools.partial) or (
            isinstance(hook, types.FunctionType) and hasattr(hook, "__wrapped__")
        ):
            # A partial's function, arguments and keywords; a decorator's inner function.
            run.register_callable(hook, source)
            if isinstance(hook, functools.partial):
                run.read(AttrSource(source, "func"), hook.func, symbolic=False)
        call = getattr(type(hook), "__call__", None)  # noqa: B004 - the class's, if Python
        if isinstance(call, types.FunctionType) and not isinstance(
            hook, (types.FunctionType, types.MethodType, functools.partial, torch.nn.Module, type)
        ):
            # A callable object: its class's __call__ runs (replaced: another call).
            run.read(AttrSource(TypeOfSource(source), "__call__"), call, symbolic=False)
            if not is_user_code(call.__code__):
                # torch's own hook objects (spectral_norm's, weight_norm's, a pruning
                # method) run unobserved: what they read of themselves is guarded here.
                library_settings.read_settings(run, hook, source)
