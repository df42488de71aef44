"""``model.train()`` / ``model.eval()`` inside the function: what they set is known.

A training step usually starts with ``model.train()``.  The call is replayed
in program order like every training-state call (FG208), but the flags it
leaves are no mystery: torch's ``Module.train(mode)`` sets ``training = mode``
on the module and, through ``children()``, on every module below it.  So
instead of taking every later read of a module's state for a read the guard
at entry cannot vouch for (which refused the record: each call was monitored
again), the monitor

1. guards the tree the call walks: each module's ``_modules`` keys, each child
   by identity, and that none of them overrides ``train`` (an override, such as
   one that keeps batch norms frozen, may leave other flags than ``mode``);
2. marks each module's ``training`` as written by the run, so later reads of it
   take the value the call set (the graph holds it) instead of being guarded at
   entry, where it may still be the other mode.

Nothing else of the modules changes, so their other reads stay ordinary reads.
"""

from __future__ import annotations

import inspect
import types
from typing import Any

import torch

from fullgraph.runtime import breaks
from fullgraph.runtime.monitor.annotation_table import Annotation
from fullgraph.runtime.sources import AttrSource, KeysSource, Source

_Module = torch.nn.Module
_SWITCHES = (_Module.train, _Module.eval)
# The annotation of a switch followed: replayed in program order, and made again by a
# run after a miss rather than handed over (``Callout.remade_on_rerun``).
SWITCH = Annotation(pure=False, category=breaks.AUTOGRAD_STATE_CALL)


def annotation(run: Any, fn: Any, args: tuple, kwargs: dict) -> Annotation | None:
    """:data:`SWITCH` where :func:`follow` follows the call, else None."""
    return SWITCH if follow(run, fn, args, kwargs) else None


def follow(run: Any, fn: Any, args: tuple, kwargs: dict) -> bool:
    """For torch's own ``train``/``eval`` on a module from outside whose tree holds no
    override of ``train``: guard that tree and mark its ``training`` flags as set by
    this run.  False where the call is anything else (it is then a state change the
    guard can't see through, as before)."""
    target = fn.__func__ if isinstance(fn, types.MethodType) else fn
    if target not in _SWITCHES:
        return False
    bound = isinstance(fn, types.MethodType)
    module = fn.__self__ if bound else (args[0] if args else None)
    if not isinstance(module, _Module):
        return False
    source = run.source_of(module)
    if source is None or run.written_external(module):
        return False
    try:
        call = inspect.signature(target).bind(module, *(args if bound else args[1:]), **kwargs)
    except TypeError:
        return False  # torch raises it when the call runs
    mode = call.arguments.get("mode", True) if target is _Module.train else False
    if not isinstance(mode, bool):
        return False  # torch raises ValueError when the call runs
    tree = _tree(module, source)
    if tree is None:
        return False
    for owner, owner_source, children in tree:
        run.read(KeysSource(AttrSource(owner_source, "_modules")), children, symbolic=False)
        run.read_class_attribute(owner, owner_source, "train")
        run.written.add((id(owner), "training"))
    for owner, owner_source, _ in tree[1:]:
        run.read(owner_source, owner, symbolic=False)
    state = run.frames[-1] if run.frames else None
    for sym in (state.call_syms or ()) if state is not None else ():
        if sym is not None:  # ``model.train(acc > 0.5)``: the mode decides the graph
            run.concretize(sym)
    return True


def _tree(module: _Module, source: Source) -> list | None:
    """(module, its source, its ``_modules`` keys) for every module ``train`` reaches,
    root first; None if one of them overrides ``train`` or a path can't be named."""
    found: list = []
    seen: set[int] = set()

    def visit(owner: _Module, owner_source: Source) -> bool:
        if owner.__dict__.get("train", type(owner).train) is not _Module.train:
            return False
        found.append((owner, owner_source, tuple(owner._modules)))
        seen.add(id(owner))
        for name, child in owner._modules.items():
            if child is None or id(child) in seen:
                continue
            if not isinstance(name, str) or not visit(child, AttrSource(owner_source, name)):
                return False
        return True

    return found if visit(module, source) else None
