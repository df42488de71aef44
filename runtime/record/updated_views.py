"""Views of inputs the graph updates in place, which a replay could only hand out as copies.

The graph computes an in-place update of an input functionally (``x.mul_(2)``
becomes ``x2 = x * 2``) and the mock writes the result back into ``x``.  A
tensor sharing ``x``'s memory that the program hands on — returns it
(``head = x[0]; head.mul_(10); return head``) or stores it into an object from
outside (``self.window = self.k[:2]``, ``LOG.append(x.detach())``) — would be a
view of the graph's copy in a replay, not of ``x``: later updates of ``x`` would
not show through it.  Such records are refused (the calls run eagerly).
"""

from __future__ import annotations

import types
from typing import Any

import torch

from fullgraph.runtime.capture.data_checks import storage_key
from fullgraph.runtime.monitor.user_code import is_opaque_class
from fullgraph.runtime.torch_internals import tree_flatten


class HandsOutAView(Exception):
    """The record would hand out a copy where eager hands out a view (``str``: what)."""


def check(run: Any, result: Any, updated: list, values: dict) -> None:
    """Raise :class:`HandsOutAView` when ``result`` or a value the run stored into an
    outside object shares memory with one of the ``updated`` inputs (sources)."""
    if not updated:
        return
    updated_storages = {
        storage_key(values[source])
        for source in updated
        if isinstance(values.get(source), torch.Tensor) and values[source].numel()
    }  # (every empty tensor's memory is at address 0: empty ones share none)

    def shares(value: Any) -> bool:
        return any(
            isinstance(t, torch.Tensor)
            and id(t) not in run.sources  # an input handed on is the object, not a copy
            and storage_key(t) in updated_storages
            for t in _tensors_in(value)
        )

    if shares(result):
        raise HandsOutAView("the function returns a view of an input it updates in place")
    for mutation in run.mutations:
        if shares(_stored(mutation)):
            raise HandsOutAView(
                f"the function stores a view of an input it updates in place ({mutation.describe()})"
            )


def _tensors_in(value: Any, depth: int = 0, seen: set | None = None) -> list:
    """The tensors ``value`` holds: in containers, and in the fields of objects the
    function hands on (``CacheOut(keys=self.k[:n])``, ``Holder(x[:2])``, a slotted
    dataclass)."""
    seen = set() if seen is None else seen
    found = []
    for leaf in tree_flatten(value)[0]:
        if isinstance(leaf, torch.Tensor):
            found.append(leaf)
        elif depth < 12 and id(leaf) not in seen and _plain_object(leaf):
            seen.add(id(leaf))
            found.extend(_tensors_in(_fields(leaf), depth + 1, seen))
    return found


def _plain_object(value: Any) -> bool:
    """An object whose fields the program may have put a view into: not a number (a
    followed size is fullgraph's own ``SizeInt``), a module of code, a function, or
    an object of torch, numpy or fullgraph (whose fields lead into their internals)."""
    return not isinstance(value, _NOT_PLAIN) and not is_opaque_class(type(value))


_NOT_PLAIN = (type, torch.nn.Module, str, bytes, int, float, complex, types.ModuleType)
_NOT_PLAIN += (types.FunctionType, types.MethodType)


def _fields(value: Any) -> list:
    """What an object holds in its ``__dict__`` and its slots."""
    held = list(vars(value).values()) if hasattr(value, "__dict__") else []
    for klass in type(value).__mro__:
        slots = vars(klass).get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__") and hasattr(value, name):
                held.append(getattr(value, name))
    return held


def _stored(mutation: Any) -> Any:
    """What the store left in its owner (or the arguments of a method call)."""
    try:
        if mutation.kind == "setattr":
            return getattr(mutation.owner, mutation.name, None)
        if mutation.kind in ("setitem", "setglobal"):
            return mutation.owner[mutation.name]
        if mutation.kind == "setcell":
            return mutation.owner.cell_contents
    except (KeyError, IndexError, TypeError, AttributeError, ValueError):
        return None
    return (mutation.args, mutation.kwargs)
