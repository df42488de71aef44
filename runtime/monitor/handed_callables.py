"""Callables handed to code the monitor does not see, which that code may call unseen.

``map(log.append, xs)``, ``functools.partial(d.get, k)``,
``stack.callback(log.append, v)``, ``max(items, key=operator.attrgetter("s"))``,
``operator.attrgetter("scale")(cfg)``: C code or unobserved library Python
calls the program's callable, and what it changes or reads is outside the
monitor's sight.  A container's method that changes an outside container
refuses the record; one that reads it guards the container whole; an
``attrgetter``'s attributes are read here, of every outside object it may be
given; ``getattr`` itself handed over refuses the record.
"""

from __future__ import annotations

import functools
import inspect
import operator
import string
import types
from typing import Any

from fullgraph.runtime.monitor import annotation_table
from fullgraph.runtime.sources import AttrSource, ItemSource


def guard(run: Any, fn: Any, args: tuple, kwargs: dict) -> None:
    """Before ``fn(*args, **kwargs)``, a call the monitor does not step into."""
    if isinstance(fn, operator.attrgetter) and args:  # ``get(cfg)``: it reads, in C
        _attrgetter_reads(run, fn, args[:1])
    if fn is str.format and args and isinstance(args[0], str):  # after LOAD_METHOD
        _format_field_reads(run, args[0], args[1:], kwargs)  # "lr={0.lr}".format(args)
    elif getattr(fn, "__name__", "") == "format" and isinstance(getattr(fn, "__self__", None), str):
        _format_field_reads(run, fn.__self__, args, kwargs)
    values = (*args, *kwargs.values())
    for value in values:
        if value is getattr:  # ``partial(getattr, cfg)``, ``map(getattr, objs, names)``
            run.refuse(f"getattr is handed to {annotation_table.qualified_name(fn)}")
        elif isinstance(value, operator.attrgetter):  # ``max(items, key=attrgetter("s"))``
            for other in values:
                _attrgetter_reads(run, value, _objects_in(run, other), compared=True)
        elif isinstance(value, types.BuiltinMethodType):
            _container_method(run, fn, value)
            _effect(run, fn, value)
        elif isinstance(value, functools.partial):  # ``stack.callback(partial(print, "x"))``
            _effect(run, fn, value)


def _effect(run: Any, fn: Any, handed: Any) -> None:
    """``map(print, rows)``, ``stack.callback(print, "done")``: a builtin with an effect
    (or a partial of one) that C code calls unseen refuses the record."""
    annotation = annotation_table.lookup(handed)
    owner = getattr(handed, "__self__", None)
    if (
        annotation is None
        or annotation.pure
        or isinstance(owner, annotation_table.MUTABLE_BUILTINS)
    ):
        return  # a container's method: _container_method decides
    run.refuse(
        f"{annotation_table.qualified_name(handed)} is handed to "
        f"{annotation_table.qualified_name(fn)}, which may call it unseen"
    )


def _container_method(run: Any, fn: Any, method: Any) -> None:
    owner = getattr(method, "__self__", None)
    if not isinstance(owner, annotation_table.MUTABLE_BUILTINS):
        return
    if run.source_of(owner) is None:
        return  # a container the call made: nothing outside to change or read
    annotation = annotation_table.lookup(method)
    if annotation is not None and (annotation.mutates or not annotation.pure):
        run.refuse(
            f"{annotation_table.qualified_name(method)} of an outside container is "
            f"handed to {annotation_table.qualified_name(fn)}, which may call it unseen"
        )
    else:
        run.read_whole(owner)


def _objects_in(run: Any, value: Any) -> list:
    """``value``, or the items of a list or tuple from outside (each read, so it has a
    path: ``max`` hands them to the key one by one)."""
    if type(value) not in (list, tuple):
        return [value]
    source = run.source_of(value)
    if source is None:
        return list(value)
    for index, item in enumerate(value):
        if run.source_of(item) is None:
            run.read(ItemSource(source, index), item, symbolic=False)
    return list(value)


def _attrgetter_reads(run: Any, getter: operator.attrgetter, objects, compared=False) -> None:
    """The attributes ``getter`` reads of each object, read here too.  An object the
    call made may lead to objects from outside (``attrgetter("k.s")`` of a class it
    built around ``o``): its path is walked as well, short of a property it has."""
    paths = getter.__reduce__()[1]
    for obj in objects:
        if not isinstance(obj, operator.attrgetter):
            for path in paths:
                _read_path(run, obj, [(True, name) for name in path.split(".")], compared)


def _read_path(run: Any, owner: Any, steps: list, compared: bool = False) -> None:
    """Read ``owner`` along ``steps`` ((is an attribute, name or key) pairs) as C code
    reads it, step by step; ``compared``: C compares the numbers it reaches (guarded by
    value).  A property of an object the call made ends the walk: its getter would run
    a second time here."""
    for is_attribute, key in steps:
        if is_attribute and run.source_of(owner) is None and _computed(owner, key):
            return
        try:
            value = getattr(owner, key) if is_attribute else owner[key]
        except Exception:  # noqa: BLE001 - it raises in the call too
            return
        if is_attribute:
            run.read_attr(owner, key, value)
            source = run.source_of(owner)
            if compared and source is not None:
                run.read(AttrSource(source, key), value, symbolic=False)
        else:
            run.read_item(owner, key, value)
        owner = value


def _computed(owner: Any, name: str) -> bool:
    """Whether ``owner.name`` runs a getter (a property or another descriptor)."""
    found = inspect.getattr_static(type(owner), name, None)
    return hasattr(type(found), "__get__") and not isinstance(
        found, (types.FunctionType, staticmethod, classmethod)
    )


def _format_field_reads(run: Any, template: str, args: tuple, kwargs: dict) -> None:
    """``"{0.lr}".format(cfg)``, ``"{a[0].name}".format(a=objs)``: str.format reads the
    attributes and items its fields name, in C; read here too, step by step."""
    try:
        fields = [field for _, field, _, _ in string.Formatter().parse(template) if field]
    except ValueError:
        return  # a malformed template: format raises the same
    automatic = 0
    for field in fields:
        first, rest = string._string.formatter_field_name_split(field)
        if first == "":
            first, automatic = automatic, automatic + 1
        try:
            owner = args[first] if isinstance(first, int) else kwargs[first]
        except (IndexError, KeyError):
            return
        _read_path(run, owner, list(rest))
