"""``isinstance`` / ``issubclass`` answers that a metaclass decides: what the guard checks.

``type``'s own check answers from the object's class alone, which the guard
holds already (an argument's type, an object's identity and, read here, its
class).  A metaclass with a check of its own reads more, unobserved:
``ABCMeta`` its registry (``Base.register(Impl)`` between calls), typing's
runtime-checkable ``Protocol`` the object's attributes, ``nn.Parameter``'s
meta an attribute of the tensor.  Such an answer is checked again by the guard
(``isinstance(v_cfg, HasScale) is False``), on the object where it has a path,
on the constant itself for a number or a string, and as
``issubclass(<its class>, Base)`` for an object the call made where the check
reads nothing but the class; where it reads more of such an object, the record
is refused.  A metaclass check written in user code is stepped into: what it
reads is guarded as it runs.  A classinfo tuple from outside is read whole (the
classes it holds decide the answer).
"""

from __future__ import annotations

import abc
import dataclasses
import types
import typing
from collections.abc import Callable
from typing import Any

import torch

from fullgraph.runtime.monitor.user_code import is_user_code
from fullgraph.runtime.sources import ArgSource, KwargSource, Source, TypeOfSource

_CHECKER = {isinstance: "__instancecheck__", issubclass: "__subclasscheck__"}
# Values the run tracks by stack slot, not by id (no source): written into the guard.
_CONSTANTS = (bool, int, float, complex, str, bytes, type(None))


# Checks that read nothing of an object but its class (ABCMeta's registry and caches,
# typing's Union, which asks ``issubclass(type(obj), arg)`` of each member):
# ``isinstance(made, C)`` is ``issubclass(type(made), C)``.
_CLASS_DECIDED = {
    abc.ABCMeta.__instancecheck__,
    abc.ABCMeta.__subclasscheck__,
    getattr(type(typing.Optional[int]), "__instancecheck__", None),  # noqa: UP045 - typing's own
} - {None, type.__instancecheck__}
# Checks that read the object itself (nn.Parameter's meta: ``t._is_param``): for an
# object the call made, what the call made it.
_OBJECT_DECIDED = {
    type(getattr(torch.nn, name)).__instancecheck__
    for name in ("Parameter", "Buffer")
    if hasattr(torch.nn, name)
} - {type.__instancecheck__}


@dataclasses.dataclass(frozen=True)
class TypeCheck:
    """``fn(subject, classinfo) is result``, checked again by the guard.

    ``source``: the path of the subject; None: ``subject`` itself goes into the
    guard as a constant.  ``paths``: where the run found each class of ``classinfo``
    (for the generated wrapper's names), by id.
    """

    fn: Callable
    source: Source | None
    subject: Any
    classinfo: Any
    result: bool
    paths: tuple = ()


def guard(run: Any, fn: Callable, args: tuple, result: Callable) -> Callable | None:
    """``isinstance(subject, classinfo)`` or ``issubclass`` in user code (or a ``case C():``
    pattern): guard what decides the answer; may return an after-phase."""
    if len(args) != 2:
        return None
    subject, classinfo = args
    items = _flatten(classinfo)
    _read_tuples(run, classinfo)
    if fn is isinstance:
        _read_class(run, subject)
    if items is None:  # nested too deep to follow
        opaque = [classinfo]
    else:
        opaque = [item for item in items if _checker(item, _CHECKER[fn]) is not None]
    if not opaque:
        return None
    if fn is isinstance and items is not None and any(type(subject) is c for c in items):
        return None  # CPython's exact-type match answers True before any metaclass
    return lambda: _record(run, fn, subject, classinfo, opaque, result())


def _record(run: Any, fn, subject, classinfo, opaque: list, value: Any) -> None:
    if not isinstance(value, bool):
        return
    source = run.source_of(subject)
    if source is None and not (type(subject) in _CONSTANTS or isinstance(subject, type)):
        # An object the call made: its class was made the same way, and what the
        # metaclass reads of it beyond that decides whether a check can be written.
        checkers = {_checker(item, _CHECKER[fn]) for item in opaque}
        if checkers <= _OBJECT_DECIDED:
            return
        plain = getattr(subject, "__class__", None) is type(subject)  # not a proxy
        if fn is isinstance and checkers <= _CLASS_DECIDED and plain:
            fn, subject = issubclass, type(subject)
        if fn is isinstance:
            names = ", ".join(getattr(item, "__name__", repr(item)) for item in opaque)
            run.refuse(
                f"isinstance of an object the call made against {names}, whose metaclass "
                "reads the object in a way the guard can't read again"
            )
            return
    paths = tuple(
        (id(item), found.expr())
        for item in (_flatten(classinfo) or ())
        if (found := run.source_of(item)) is not None
    )
    check = TypeCheck(fn, source, subject, classinfo, value, paths)
    key = (fn, source if source is not None else id(subject), _identity(classinfo))
    run.type_checks.setdefault(key, check)


def _identity(classinfo: Any) -> Any:
    if type(classinfo) is tuple:
        return tuple(_identity(item) for item in classinfo)
    return id(classinfo)


def _checker(item: Any, name: str) -> Any | None:
    """The metaclass check that answers for ``item`` if it is neither ``type``'s own nor
    one the monitor steps into (user code)."""
    if type(item) is type:
        return None  # CPython answers without looking for one
    found = None
    for klass in type(item).__mro__:
        if name in klass.__dict__:
            found = klass.__dict__[name]
            break
    if found is None or found is type.__dict__[name]:
        return None
    code = getattr(found, "__code__", None)
    if code is not None and is_user_code(code):
        return None  # stepped into: its reads are guarded as they happen
    return found


def _flatten(classinfo: Any, depth: int = 0) -> list | None:
    """The classes (and other checkable objects) a classinfo names, in order."""
    if depth > 8:
        return None
    if type(classinfo) is tuple or isinstance(classinfo, types.UnionType):
        members = classinfo if type(classinfo) is tuple else classinfo.__args__
        found = []
        for member in members:
            inner = _flatten(member, depth + 1)
            if inner is None:
                return None
            found += inner
        return found
    return [classinfo]


def _read_tuples(run: Any, classinfo: Any, depth: int = 0) -> None:
    """A classinfo tuple from outside (``TYPES = (A, B)``): the classes it holds decide."""
    if type(classinfo) is not tuple or depth > 8:
        return
    if run.source_of(classinfo) is not None:
        run.read_nested(classinfo)
    for member in classinfo:
        _read_tuples(run, member, depth + 1)


def _read_class(run: Any, subject: Any) -> None:
    """The class of an object checked by identity (``obj.__class__ = Other`` keeps it);
    arguments, tensors and containers are checked by their type already."""
    source = run.source_of(subject)
    if source is None or isinstance(source, (ArgSource, KwargSource)):
        return
    if isinstance(subject, (torch.Tensor, list, tuple, dict, set, type, types.ModuleType)):
        return
    run.read(TypeOfSource(source), type(subject), symbolic=False)
