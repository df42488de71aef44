"""``if cache:``, ``not items``, ``x if heads else y`` on a container from outside.

The interpreter asks a list, dict, set, deque or torch ``ModuleList`` for its
length, in its own code, unobserved: the branch taken depends on whether the
container is empty, which the guard then checks (``bool(<path>)``), so a cache
emptied or filled between calls is a miss.  (A class of the program's with its
own ``__bool__`` / ``__len__`` is stepped into instead: ``class_slots``.)
"""

from __future__ import annotations

import collections
import types
from typing import Any

import torch

from fullgraph.runtime.sources import TruthSource

# Containers whose truth is their length, computed by Python's or torch's own code
# (a torch ModuleList's ``__len__`` only counts its modules).
_SIZED = (list, tuple, dict, set, frozenset, bytearray, collections.deque)
_SIZED_MODULES = (
    torch.nn.ModuleList,
    torch.nn.ModuleDict,
    torch.nn.Sequential,
    torch.nn.ParameterList,
    torch.nn.ParameterDict,
)


def read_truth(run: Any, value: Any) -> None:
    """The truth of ``value`` decided a branch: guard it when its emptiness decides it."""
    if not _emptiness_decides(value):
        return
    source = run.source_of(value)
    # (A container the run changed wholesale is guarded whole where it changed.)
    if source is not None and not run.written_external(value):
        run.read(TruthSource(source), bool(value), symbolic=False)


def _emptiness_decides(value: Any) -> bool:
    cls = type(value)
    if cls in _SIZED_MODULES:
        return True
    if not isinstance(value, _SIZED) or hasattr(cls, "__bool__"):
        return False
    return not isinstance(getattr(cls, "__len__", None), types.FunctionType)
