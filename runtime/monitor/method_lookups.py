"""Methods found on a class: what the guard checks so a patched method is a miss.

``p.act(x)`` compiles to a method load that finds the function on ``type(p)``
and pushes it with ``p``; no attribute of ``p`` itself is read.  The function
is checked where the lookup found it: the instance's ``__dict__`` still does
not shadow it and the class still holds it (``p.act = ...``, ``Base.act = ...``
and a subclass's override are misses); for an object the call made, that its
class still holds it (``class_slots.read_lookup``).  ``super().forward(x)``
looks the name up in the classes after the calling method's class in
``type(self).__mro__``: each of those up to the one that defines it is
checked, so an override added in between, or the method replaced on the base
class, is a miss too.
"""

from __future__ import annotations

import functools
import inspect
import types
from typing import Any

from fullgraph.runtime.monitor import class_slots, user_code
from fullgraph.runtime.sources import (
    AttrSource,
    ContainsSource,
    ItemSource,
    LookupSource,
    TypeOfSource,
)


def read_method(run: Any, owner: Any, name: str, function: Any) -> None:
    """A method load of ``owner.name`` pushed ``function`` (found on the type) and ``owner``."""
    if (id(owner), name) in run.written or not isinstance(function, types.FunctionType):
        return  # builtin methods (``d.get``) are decided by the owner's type
    if not _found_on_class(owner, name, function):
        return
    source = run.source_of(owner)
    if source is not None:
        run.read_class_attribute(owner, source, name)
    else:  # an object the call made: no instance attribute to shadow it, its class's
        class_slots.read_lookup(run, owner, name)


def read_super_attr(run: Any, start: type, obj: Any, name: str, value: Any) -> None:
    """``super(start, obj).name`` found ``value``: guard the classes it looked in."""
    source = run.source_of(obj)
    if source is None:
        return
    cls = obj if isinstance(obj, type) else type(obj)
    mro = cls.__mro__
    if start not in mro:
        return
    mro_source = AttrSource(source if isinstance(obj, type) else TypeOfSource(source), "__mro__")
    for position in range(mro.index(start) + 1, len(mro)):
        namespace = AttrSource(ItemSource(mro_source, position), "__dict__")
        if name in mro[position].__dict__:
            run.read(ItemSource(namespace, name), mro[position].__dict__[name], symbolic=False)
            return
        run.read(ContainsSource(namespace, name), False, symbolic=False)


def _found_on_class(owner: Any, name: str, value: Any) -> bool:
    """Whether a method load of ``owner.name`` found ``value`` on the owner's class."""
    if isinstance(owner, (type, types.ModuleType)):
        return False
    try:
        return inspect.getattr_static(type(owner), name, None) is value
    except Exception:  # noqa: BLE001 - an odd metaclass: treated as a plain read
        return False


def cached_property_cold(owner: Any, name: str) -> bool | None:
    """Before ``owner.name``: None unless the class gives a ``functools.cached_property``
    or another descriptor of that kind, the program's (a ``__get__`` without ``__set__``:
    Django's or werkzeug's ``cached_property``, pyramid's ``reify``, which store their
    value in the instance); else whether ``owner`` has no value of its own yet (the
    descriptor's ``__get__`` runs now)."""
    try:
        found = inspect.getattr_static(type(owner), name, None)
    except Exception:  # noqa: BLE001 - a class whose lookup raises: not a cached property
        return None
    own = getattr(owner, "__dict__", None)
    if not isinstance(found, functools.cached_property) and not (
        _program_lazy_descriptor(found) and isinstance(own, dict)
    ):
        return None
    return not (isinstance(own, dict) and name in own)


def _program_lazy_descriptor(found: Any) -> bool:
    kind = type(found)
    getter = getattr(kind, "__get__", None)
    return (
        isinstance(getter, types.FunctionType)
        and user_code.is_user_code(getter.__code__)
        and not hasattr(kind, "__set__")
        and not hasattr(kind, "__delete__")
    )


def read_cached_property(
    run: Any, owner: Any, name: str, cold: bool, value: Any, ours: bool
) -> None:
    """``owner.name`` of a ``cached_property``: whether the instance held a value decides
    whether its getter runs.  Cold, the getter ran (stepped into) and the guard checks
    the instance still holds none; warm, the instance's value is read where it is
    (``type(o).name`` would run the getter in the guard when the cache is gone)."""
    source = run.source_of(owner)
    if source is None or ours:  # ``ours``: the run stored the attribute before this read
        run.read_attr(owner, name, value)
        return
    lookup = LookupSource(source, name)
    run.read(lookup, inspect.getattr_static(type(owner), name) if cold else value, symbolic=False)
    if cold and isinstance(inspect.getattr_static(type(owner), name), functools.cached_property):
        # functools' getter stored its value in the instance, unseen: a later ``del``
        # removes the run's.  (A program's descriptor makes its store stepped into.)
        run.mark_written(owner, name)
