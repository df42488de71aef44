"""Attributes a module call changes in code the monitor does not step into.

A torch layer's forward, and library hooks on any module, run unobserved:
only their torch calls reach the monitor.  Some of them store Python state:
``nn.utils.weight_norm``'s pre-hook sets ``module.weight`` to a tensor it
computes, ``spectral_norm``'s likewise, a layer may cache a tensor or count
calls.  A replay that skipped those stores would leave the module as the first
call left it.  Each such call is bracketed: the attributes of the modules it
may change are taken before and compared after, and a change the run did not
already record becomes a store the mock replays (or refuses the record when a
replay could not repeat it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

# Slots whose entries a replay can set again with setattr (a buffer stays a buffer).
_REPLAYABLE_SLOTS = ("_buffers",)
# Slots whose changes no replay repeats: a parameter or a submodule made while running.
_REFUSED_SLOTS = ("_parameters", "_modules")


def _state(module: torch.nn.Module) -> dict[tuple[str, str], int]:
    """(slot, name) -> id of the value, for the module's own attributes and its slots."""
    state = {
        ("__dict__", name): id(value)
        for name, value in vars(module).items()
        if name not in _REPLAYABLE_SLOTS + _REFUSED_SLOTS
    }
    for slot in _REPLAYABLE_SLOTS + _REFUSED_SLOTS:
        for name, value in getattr(module, slot, {}).items():
            state[(slot, name)] = id(value)
    return state


def watch(run: Any, module: torch.nn.Module, whole_tree: bool) -> Callable[[], None]:
    """The check to run after ``module`` was called: ``whole_tree`` for a torch layer,
    whose children run unobserved too; otherwise only the module itself (its hooks)."""
    modules = list(module.modules()) if whole_tree else [module]
    before = [(m, _state(m)) for m in modules]

    def after() -> None:
        for changed, state in before:
            now = _state(changed)
            for key in state.keys() | now.keys():
                if state.get(key) != now.get(key):
                    _note(run, changed, key, deleted=key not in now)

    return after


def _note(run: Any, module: torch.nn.Module, key: tuple[str, str], deleted: bool) -> None:
    slot, name = key
    if (id(module), name) in run.written:
        return  # the run saw that store (user code stepped into): it is recorded already
    if run.source_of(module) is None:
        return  # a module the call made: nothing outside to bring up to date
    what = f"{type(module).__name__}.{name}"
    if slot in _REFUSED_SLOTS:
        kind = "parameter" if slot == "_parameters" else "submodule"
        run.refuse(f"{what}: a {kind} changed by torch code while the module ran")
        return
    run.store_attr(module, name, delete=deleted, direct=slot == "__dict__")
