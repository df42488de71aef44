"""What a store the program made left behind, read without running the program's code.

The mock replays a store as the state it left (``setattr(o, n, v)``, ``del o.n``,
``d[k] = v``): that state is read when the owner changes again and when the mock is
written, while the call being monitored is still the user's call.  Reading it with
``getattr`` / ``owner[key]`` would run the program's code a second time: a
``cached_property`` deleted by the call is built again, a property's getter or a
class's ``__getattr__`` runs, a ``dict`` subclass whose ``__getitem__`` transforms
hands back the transformed value (which the mock would then store).  Here the state
is read where the store put it: the instance ``__dict__``, a module's parameter /
buffer / submodule dicts, a slot, or through the container methods of a library base
class.  Objects whose class stores attributes with a library ``__setattr__`` of its
own (a config node) may keep them elsewhere: those not found in the instance are
read with ``getattr``, unless that would run the program's ``__getattr__``.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Mapping
from typing import Any

import torch

from fullgraph.runtime.monitor import user_code
from fullgraph.runtime.monitor.state import Mutation, is_mapping, state_group

ABSENT_STATE = ("absent",)
_MISSING = object()
_MODULE_DICTS = ("_parameters", "_buffers", "_modules")


def current_state(mutation: Mutation) -> tuple:
    """The state a store mutation leaves now: ``("value", v)`` or ``("absent",)``."""
    owner, name, group = mutation.owner, mutation.name, state_group(mutation)
    if group == "attr":
        return attribute_state(owner, name)
    if group == "cell":
        try:
            return ("value", owner.cell_contents)
        except ValueError:
            return ABSENT_STATE
    return item_state(owner, name)


def attribute_state(owner: Any, name: str) -> tuple:
    """``owner.name`` as the store left it (see the module docstring)."""
    kind = type(owner)
    try:
        descriptor = inspect.getattr_static(kind, name, _MISSING)
    except Exception:  # noqa: BLE001 - an odd metaclass: read as before
        return _read_with_getattr(owner, name)
    if _is_data_descriptor(descriptor):
        # A slot, a C type's state (``requires_grad``), a library descriptor: the store
        # went through it.  (A property whose getter is the program's keeps the plain
        # read: its setter, the program's too, made the store's effects itself.)
        return _read_with_getattr(owner, name)
    try:
        own = object.__getattribute__(owner, "__dict__")
    except AttributeError:
        own = None
    if isinstance(own, Mapping):
        if name in own:
            return ("value", own[name])
        if isinstance(owner, torch.nn.Module):
            for slots in (own.get(d) for d in _MODULE_DICTS):
                if isinstance(slots, dict) and name in slots:
                    return ("value", slots[name])
    setattr_ = getattr(kind, "__setattr__", object.__setattr__)
    library_store = setattr_ not in user_code.PLAIN_SETATTRS and not user_code.is_program_function(
        setattr_
    )
    if not library_store or descriptor is not _MISSING or _program_fallback(owner, own):
        # Not the instance's own: a class attribute, a method, a ``cached_property`` not
        # built, or what the program's ``__getattr__`` would make: the store left none.
        return ABSENT_STATE
    return _read_with_getattr(owner, name)  # a library keeps it where its code knows


def _program_fallback(owner: Any, own: Any) -> bool:
    """Whether a missing attribute of ``owner`` runs the program's ``__getattr__`` (its
    class's, or a module's own, PEP 562)."""
    fallback = getattr(type(owner), "__getattr__", None)
    if isinstance(owner, types.ModuleType) and isinstance(own, Mapping):
        fallback = own.get("__getattr__", fallback)
    return user_code.is_program_function(fallback)


def item_state(owner: Any, key: Any) -> tuple:
    """``owner[key]`` as the store left it, read through the first container methods of
    ``owner``'s class that are not the program's (a ``dict`` subclass's own
    ``__getitem__`` may transform what it hands out)."""
    getitem = _library_method(owner, "__getitem__")
    if is_mapping(owner):
        contains = _library_method(owner, "__contains__")
        if getitem is None or contains is None:
            return ("value", owner[key]) if key in owner else ABSENT_STATE
        return ("value", getitem(owner, key)) if contains(owner, key) else ABSENT_STATE
    try:  # a list, a ModuleList: ``key`` is an index
        return ("value", getitem(owner, key) if getitem is not None else owner[key])
    except (IndexError, KeyError, TypeError):
        return ABSENT_STATE


def read_after_delete_is_outside(owner: Any, name: str) -> bool:
    """Whether ``owner.name`` read after ``del owner.name`` still gives a value the run
    did not make: a class attribute (a base class's, for a class), a method, or what the
    class's own ``__getattr__`` makes.  (Asked before the deletion is made.)"""
    if isinstance(owner, type):
        return any(name in vars(klass) for klass in owner.__mro__[1:])
    kind = type(owner)
    if user_code.is_program_function(getattr(kind, "__getattr__", None)):
        return True
    try:
        found = inspect.getattr_static(kind, name, _MISSING)
    except Exception:  # noqa: BLE001 - an odd metaclass: taken as outside
        return True
    return found is not _MISSING and not _is_data_descriptor(found)


def _read_with_getattr(owner: Any, name: str) -> tuple:
    try:
        return ("value", getattr(owner, name))
    except AttributeError:
        return ABSENT_STATE


def _is_data_descriptor(descriptor: Any) -> bool:
    kind = type(descriptor)
    return descriptor is not _MISSING and (hasattr(kind, "__set__") or hasattr(kind, "__delete__"))


def _library_method(owner: Any, name: str) -> Any:
    """The first ``name`` along ``type(owner)``'s MRO that is not the program's code."""
    klass = user_code.library_class(owner, name)
    return None if klass is None else vars(klass)[name]
