"""Paths to the closure cells a monitored frame reads and writes.

A cell of a function with a source is ``CellSource(<function>, i)``.  Other
functions the run steps into get a path too, or the run says it has none:

- a method, static method, class method or property of a class the run has a
  source for (``R().go()`` with ``R`` read from a closure): found on the class;
- a function the run made itself (``def inner(): ...`` in a helper): its cells
  are the cells of the function that made it, or ones the run created;
- anything else (a function reached through code the monitor does not see):
  the record is refused, since what the cell holds (a list the method appends
  to) is outside state no guard could read and no mock could replay.
"""

from __future__ import annotations

import types
from typing import Any

from fullgraph.runtime.monitor import user_code
from fullgraph.runtime.sources import AttrSource, CellSource, ItemSource, Source, TypeOfSource

_MADE_BY_THE_RUN = object()  # a cell the run created: local state, no path needed


def cell_source(run: Any, function: types.FunctionType, index: int) -> Source | None:
    """The path to ``function.__closure__[index]``; None for a cell the run created or
    when the record was refused for want of one."""
    found = _resolve(run, function, index, depth=0)
    return None if found is _MADE_BY_THE_RUN else found


def _resolve(run: Any, function: types.FunctionType, index: int, depth: int):
    if function.__code__.co_freevars[index] == "__class__":
        return _MADE_BY_THE_RUN  # zero-argument super()'s class: fixed when it was defined
    source = run.source_of(function) or _on_a_class(run, function)
    if source is not None:
        return CellSource(source, index)
    made = run.made_functions.get(id(function))
    if made is not None and depth < 20:
        maker = made[1]
        cell = function.__closure__[index]
        for position, outer in enumerate(getattr(maker, "__closure__", None) or ()):
            if outer is cell:  # a cell the maker closed over itself
                return _resolve(run, maker, position, depth + 1)
        return _MADE_BY_THE_RUN  # one of the maker's own variables, made in this run
    if _generated(function.__code__):
        # Generated code (a dataclass's __init__): its cells hold what the class was
        # made with (``__class__``, default factories), not state the call changes.
        return _MADE_BY_THE_RUN
    run.refuse(
        f"{function.__qualname__} reads a closure variable the monitor has no path to "
        "(a function reached through code it does not see)"
    )
    return None


def _generated(code: types.CodeType) -> bool:
    """Code a library made from text: a dataclass's methods, defined inside its
    ``__create_fn__``.  Not any code whose file name is ``<...>``: a REPL's
    ``<stdin>``, an IPython cell, ``exec`` of a string are the program's own."""
    qualname = getattr(code, "co_qualname", None)
    if qualname is None:  # Python 3.10 has no qualified names on code
        return code.co_filename == "<string>"
    return code.co_filename.startswith("<") and qualname.startswith("__create_fn__.")


def _on_a_class(run: Any, function: types.FunctionType) -> Source | None:
    """``<class>.<name>`` (or its ``__func__`` / ``fget``...) for a function defined on a
    class the run has a source for, or on the class of an object it has one for
    (``type(cfg).__mro__[i].__dict__[name]``: a property a factory made); read, so a
    replaced method is another call."""
    for owner_source, owner in list(run.source_values.items()):
        for klass_source, klass in _classes(owner_source, owner):
            for name, attribute in vars(klass).items():
                path = _path_to(attribute, function, _member(klass_source, klass, name))
                if path is not None:
                    run.read(path, function, symbolic=False)
                    return path
    return None


def _classes(source: Source, owner: Any) -> list[tuple[Source, type]]:
    """The class ``owner`` is, or the classes an instance's attributes come from."""
    if isinstance(owner, type):
        return [(source, owner)]
    if isinstance(owner, (types.ModuleType, types.FunctionType)):
        return []
    mro = AttrSource(TypeOfSource(source), "__mro__")
    return [
        (ItemSource(mro, i), klass)
        for i, klass in enumerate(type(owner).__mro__)
        if klass.__module__ != "builtins" and not user_code.is_opaque_class(klass)
    ]  # (a namedtuple's methods are the program's class's: ``P._asdict``)


def _member(klass_source: Source, klass: type, name: str) -> Source:
    """``<class>.name`` as it is in the class's own namespace (a class of an MRO is
    read through its ``__dict__``: ``getattr`` would find a subclass's first)."""
    if isinstance(klass_source, ItemSource):
        return ItemSource(AttrSource(klass_source, "__dict__"), name)
    return AttrSource(klass_source, name)


def _path_to(attribute: Any, function: Any, source: Source) -> Source | None:
    if attribute is function:
        return source
    wrapped = getattr(attribute, "__wrapped__", None)  # a decorated method
    if isinstance(attribute, types.FunctionType) and wrapped is not None:
        return _path_to(wrapped, function, AttrSource(source, "__wrapped__"))
    if isinstance(attribute, staticmethod) and attribute.__func__ is function:
        return source  # Class.name is the function itself
    if isinstance(attribute, classmethod) and attribute.__func__ is function:
        return AttrSource(source, "__func__")  # Class.name is a bound method
    if isinstance(attribute, property):
        for accessor in ("fget", "fset", "fdel"):
            if getattr(attribute, accessor) is function:
                return AttrSource(source, accessor)
    return None
