"""Iteration over external containers: which item came from where.

``for layer in self.layers``, ``enumerate(xs)``, ``zip(a, b)``,
``d.items()``: each item a loop yields keeps a source path into the external
container (``M.layers[2]``), so what the program reads from it is guarded,
and the container's length is guarded when the loop runs to its end.
Mixed into :class:`~fullgraph.runtime.monitor.run.MonitorRun`.
"""

from __future__ import annotations

import array
import collections
import dataclasses
import enum
import types
from typing import Any

import torch

from fullgraph.runtime.monitor import dict_keys
from fullgraph.runtime.monitor.user_code import is_user_code
from fullgraph.runtime.record.codegen import is_literal
from fullgraph.runtime.sources import (
    ItemSource,
    IterItemsSource,
    LenSource,
    Source,
)

# torch's sequences of modules and parameters (indexed, sliced, iterated like a list)
# and its dicts of them.
MODULE_SEQUENCES = (torch.nn.ModuleList, torch.nn.Sequential, torch.nn.ParameterList)
MODULE_DICTS = (torch.nn.ParameterDict, torch.nn.ModuleDict)

# Containers whose iteration is pure and repeatable: the guard can re-read the items.
SNAPSHOT_ITERABLES = (
    set,
    frozenset,
    collections.deque,
    range,
    str,
    bytes,
    type({}.keys()),
    type({}.values()),
    type({}.items()),
    *MODULE_DICTS,  # iterating yields its keys
    collections.UserDict,
    collections.UserList,
    types.MappingProxyType,
    enum.EnumMeta,  # ``for member in Color``
    bytearray,
    array.array,
)


def iterates_in_user_code(iterable: Any) -> bool:
    """Whether ``iter(iterable)`` runs a user-written ``__iter__`` (observed by the monitor)."""
    method = getattr(type(iterable), "__iter__", None)
    code = getattr(method, "__code__", None)
    return code is not None and is_user_code(code)


@dataclasses.dataclass
class IteratorState:
    kind: str
    source: Source | None
    iterable: Any
    index: int = 0
    keys: tuple | None = None
    inner: list[IteratorState] | None = None


class IterationTracking:
    """Sources for the items of external containers a run iterates over."""

    def derive_iterator(self, iterator: Any, iterable: Any, kind: str) -> None:
        if iterator is iterable and id(iterator) in self.iterators:
            return
        inner = self.iterators.get(id(iterable))
        if kind == "iter" and inner is not None:
            self.iterators[id(iterator)] = inner
            self.keepalive.append(iterator)
            return
        if kind in ("enumerate", "zip"):
            state = IteratorState(kind, None, iterable)
        else:
            state = self.follow_iterable(iterable, kind)
            if state is None:
                return
        self.iterators[id(iterator)] = state
        self.keepalive.append(iterator)

    def follow_iterable(self, iterable: Any, kind: str = "iter") -> IteratorState | None:
        """How the items of an outside ``iterable`` are guarded as they are yielded,
        or None where nothing needs guarding (made by the call, a tensor, a user
        ``__iter__`` the monitor steps into)."""
        source = self.source_of(iterable)
        if source is None or self.written_external(iterable):
            return None
        if isinstance(iterable, (dict, torch.nn.ModuleDict)) or kind in ("items", "values", "keys"):
            keys = dict_keys.read_keys(self, source, iterable)  # each as an item read names it
            return IteratorState("keys" if kind == "iter" else kind, source, iterable, keys=keys)
        if isinstance(
            iterable,
            (list, tuple, *MODULE_SEQUENCES),
        ):
            return IteratorState(kind, source, iterable)
        if isinstance(iterable, torch.Tensor):
            return None  # Tensor.__iter__ is a torch call: the capture unbinds it in the graph
        if iterates_in_user_code(iterable):
            return None  # its __iter__ runs under observation: what it reads is guarded there
        return self.snapshot_items(iterable, source)

    def snapshot_items(self, iterable: Any, source: Source) -> IteratorState | None:
        """Guard what an external container yields when its iteration is not observed.

        A set, frozenset, deque, range, string or dict view is read as the tuple of
        its items in iteration order (equal sets can iterate in different orders);
        an iterator from outside can't be re-read and a replay would not advance it,
        and an unknown library iterable may have effects when iterated (a data
        loader): both refuse the record.
        """
        if not isinstance(iterable, SNAPSHOT_ITERABLES):
            what = "an iterator" if iter(iterable) is iterable else type(iterable).__name__
            self.refuse(f"iteration over {what} from outside the call ({source.expr()})")
            return None
        items = tuple(iterable)
        whole = IterItemsSource(source)
        if is_literal(items):
            self.read(whole, items, symbolic=False)  # order, length and values at once
            return IteratorState("checked", None, items)
        return IteratorState("iter", whole, items)

    def derive_compound(self, iterator: Any, kind: str, inputs: list) -> None:
        inner = []
        for item in inputs:
            # ``enumerate(d)``, ``zip(keys, a_set)``: an outside dict's keys, a set's or
            # deque's items are guarded as ``for k in d`` guards them.
            state = self.iterators.get(id(item))
            inner.append(state if state is not None else self.follow_iterable(item))
        self.iterators[id(iterator)] = IteratorState(kind, None, iterator, inner=inner)
        self.keepalive.append(iterator)

    def iterator_yielded(self, iterator: Any, item: Any) -> None:
        state = self.iterators.get(id(iterator))
        if state is not None:
            self._yield(state, item)

    def _yield(self, state: IteratorState, item: Any) -> None:
        index = state.index
        state.index += 1
        if state.kind == "enumerate":
            if state.inner and state.inner[0] is not None and isinstance(item, tuple):
                self._yield(state.inner[0], item[1])
        elif state.kind == "zip":
            for sub, value in zip(state.inner or [], item if isinstance(item, tuple) else ()):
                if sub is not None:
                    self._yield(sub, value)
        elif state.kind in ("keys", "checked"):
            pass  # guarded as a whole
        elif state.kind in ("items", "values"):
            # (a key the run stored holds its value: pinned, not guarded at entry)
            key = state.keys[index] if state.keys and index < len(state.keys) else None
            value = item[1] if state.kind == "items" and isinstance(item, tuple) else item
            if state.keys and index < len(state.keys) and not self._stored_item(state, index):
                self.read(ItemSource(state.source, key), value, symbolic=False)
        elif state.kind == "reversed":
            length = len(state.iterable)
            self.read(LenSource(state.source), length, symbolic=False)
            self.read(ItemSource(state.source, length - 1 - index), item, symbolic=False)
        elif state.source is not None and not self.pin_stored(state.iterable, index):
            self.read(ItemSource(state.source, index), item, symbolic=False)

    def _stored_item(self, state: IteratorState, index: int) -> bool:
        keys = tuple(state.iterable.keys()) if isinstance(state.iterable, dict) else ()
        return index < len(keys) and self.pin_stored(state.iterable, keys[index])

    def iterator_exhausted(self, iterator: Any) -> None:
        state = self.iterators.get(id(iterator))
        if state is None:
            return
        for sub in state.inner or [state]:
            if sub is not None and sub.source is not None and sub.kind in ("iter", "reversed"):
                self.read(LenSource(sub.source), len(sub.iterable), symbolic=False)

    def unpacked(self, sequence: Any, items: list) -> None:
        source = self.source_of(sequence)
        if source is None or isinstance(sequence, torch.Tensor):
            return
        if isinstance(sequence, (list, tuple)) and not self.written_external(sequence):
            self.read(LenSource(source), len(sequence), symbolic=False)
            for i, item in enumerate(items):
                self.read(ItemSource(source, i), item, symbolic=False)
