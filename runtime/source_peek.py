"""What a source's path holds now, read without running the program's code.

After a miss, the compiled callable asks what changed since the latest record
(numbers seen to change are lifted, sizes seen to change are followed).
Evaluating the record's paths as Python would run the program's code on the
way: a ``defaultdict``'s ``__missing__`` inserting the key the path names, a
property or a parametrization computing (drawing random numbers, stepping a
counter), a ``__getattr__`` — effects eager never makes.  Only plain steps are
taken here: items of exact dicts, lists and tuples; attributes held in an
object's own ``__dict__`` (or, for a module, in its parameters, buffers and
submodules) that no data descriptor of its class takes over.  Any other step
gives up, and nothing is learnt from that path.
"""

from __future__ import annotations

import functools
import inspect
import types
from typing import Any

import torch

from fullgraph.runtime.sources import (
    ArgSource,
    AttrSource,
    CellSource,
    ConstSource,
    ItemSource,
    KwargSource,
    RootFunctionSource,
    RootModuleSource,
    Source,
)


class Unreadable(Exception):
    """The path can't be followed without running code (or is gone)."""


def peek(source: Source, scope: dict) -> Any:
    """The value at ``source`` in ``scope`` (``A``, ``K``, ``M``, ``F`` and the guard's
    names), or :class:`Unreadable`."""
    if isinstance(source, ArgSource):
        return _item(scope["A"], source.index)
    if isinstance(source, KwargSource):
        return _item(scope["K"], source.name)
    if isinstance(source, RootModuleSource):
        return scope["M"]
    if isinstance(source, RootFunctionSource):
        return scope["F"]
    if isinstance(source, ConstSource):
        if source.name not in scope:
            raise Unreadable(source.name)
        return scope[source.name]
    if isinstance(source, ItemSource):
        return _item(peek(source.base, scope), source.key)
    if isinstance(source, AttrSource):
        return _attribute(peek(source.base, scope), source.name)
    if isinstance(source, CellSource):  # a closure variable: no code runs to read it
        function = peek(source.function, scope)
        cells = getattr(function, "__closure__", None) if _built_in(function) else None
        if not cells or source.index >= len(cells):
            raise Unreadable("__closure__")
        try:
            return cells[source.index].cell_contents
        except ValueError:  # an empty cell
            raise Unreadable("cell_contents") from None
    raise Unreadable(type(source).__name__)


def _item(container: Any, key: Any) -> Any:
    # dict's own lookup (a subclass's ``__missing__`` runs only for an absent key, and
    # ``dict.__contains__`` asks first); a list's or tuple's own indexing (torch.Size).
    if isinstance(container, dict):
        if type(key) in (str, int, float, bool, tuple) and dict.__contains__(container, key):
            return dict.__getitem__(container, key)
    elif isinstance(container, (list, tuple)) and type(key) is int:
        kind = list if isinstance(container, list) else tuple
        if -kind.__len__(container) <= key < kind.__len__(container):
            return kind.__getitem__(container, key)
    raise Unreadable(key)


def _attribute(owner: Any, name: str) -> Any:
    if isinstance(owner, types.ModuleType):
        namespace = vars(owner)
        if name in namespace:
            return namespace[name]
        raise Unreadable(name)
    if _built_in(owner):  # a function's, bound method's, cell's or partial's own fields
        try:
            return getattr(owner, name)
        except (AttributeError, ValueError):
            raise Unreadable(name) from None
    if name == "__dict__":  # ``vars(obj)``: the instance's own namespace, no code runs
        try:
            return object.__getattribute__(owner, "__dict__")
        except (AttributeError, TypeError):
            raise Unreadable(name) from None
    declared = inspect.getattr_static(type(owner), name, _ABSENT)
    if isinstance(declared, types.MemberDescriptorType):  # a ``__slots__`` slot
        try:
            return declared.__get__(owner, type(owner))
        except AttributeError:
            raise Unreadable(name) from None
    if declared is not _ABSENT and _data_descriptor(declared):
        raise Unreadable(name)  # a property (a parametrization): it would run
    try:
        own = object.__getattribute__(owner, "__dict__")
    except (AttributeError, TypeError):
        own = None
    if isinstance(own, dict) and name in own:
        return own[name]
    if isinstance(owner, torch.nn.Module):
        for slot in ("_parameters", "_buffers", "_modules"):
            held = own.get(slot) if isinstance(own, dict) else None
            if isinstance(held, dict) and name in held:
                return held[name]
    if declared is not _ABSENT and not hasattr(type(declared), "__get__"):
        return declared  # a plain class attribute (a default the instance doesn't override)
    raise Unreadable(name)


def _built_in(value: Any) -> bool:
    """Objects of interpreter types whose attributes are the interpreter's own."""
    return type(value) in _INTERPRETER_TYPES


_INTERPRETER_TYPES = (
    types.FunctionType,
    types.MethodType,
    types.CellType,
    types.CodeType,
    types.BuiltinFunctionType,
    functools.partial,
)


def _data_descriptor(value: Any) -> bool:
    kind = type(value)
    return hasattr(kind, "__get__") and (hasattr(kind, "__set__") or hasattr(kind, "__delete__"))


_ABSENT = object()
