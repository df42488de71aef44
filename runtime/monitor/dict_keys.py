"""Dict keys the guard must name: how a read through a key is written, and a dict's keys.

A key with text of its own (``"lr"``, ``3``, ``torch.float32``,
``torch.device('cpu')``, ``0.5``, ``b"k"``, ``int``) is written as that text.
Any other key (a class of the program, an Enum member, an object hashed by
identity) is written as the path the run reached it by (a
:class:`~fullgraph.runtime.sources.KeyPath`): the guard then makes the very
lookup the program makes, with the object the rest of the guard holds to be the
program's key.  A static object with no path (an Enum member a library call
returned) is bound by name in the generated code's namespace.  A key with
neither has no single read: the whole dict is read, each key by its position.
"""

from __future__ import annotations

import enum
import re
import types
from typing import Any

from fullgraph.runtime.record.codegen import is_literal
from fullgraph.runtime.sources import (
    ConstSource,
    ItemSource,
    KeyPath,
    KeysSource,
    LenSource,
    Source,
    is_key_representable,
)

# Objects that live as long as the program and compare by identity: bound by name.
_STATIC = (type, enum.Enum, types.FunctionType, types.BuiltinFunctionType, types.ModuleType)


def key_form(run: Any, key: Any) -> Any | None:
    """``key`` as an ItemSource / ContainsSource holds it, or None when it has no form."""
    if is_key_representable(key):
        return key
    if type(key) is tuple:
        parts = tuple(key_form(run, part) for part in key)
        return None if any(part is None for part in parts) else parts
    if isinstance(key, slice):
        return None
    try:
        hash(key)
    except TypeError:
        return None
    source = run.source_of(key)
    if source is not None:
        return KeyPath(source)
    if isinstance(key, _STATIC):
        return KeyPath(_bound(run, key))
    return None


def _bound(run: Any, value: Any) -> Source:
    """A name for ``value`` in the guard's and the mock's namespace (their constants)."""
    entry = run.globals_consts.get(id(value))
    if entry is None:
        hint = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
        if isinstance(value, enum.Enum):
            hint = f"{type(value).__name__}_{value.name}"
        base = "key_" + (re.sub(r"\W+", "_", str(hint or type(value).__name__)).strip("_"))
        taken = {name for name, _ in run.globals_consts.values()}
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base}_{n}"
        entry = run.globals_consts[id(value)] = (name, value)
    return ConstSource(entry[0])


def read_keys(run: Any, source: Source, mapping: Any) -> tuple:
    """Guard a dict's keys, in order, and return the form of each for item reads.

    Keys that are all literals are one check (``tuple(d.keys()) == ('a', 'b')``);
    otherwise the length and each key at its position (``tuple(d.keys())[0] is int``),
    and a key without a form of its own is read at that position.
    """
    keys = tuple(mapping.keys())
    if is_literal(keys):
        run.read(KeysSource(source), keys, symbolic=False)
        return keys
    run.read(LenSource(source), len(keys), symbolic=False)
    listed = KeysSource(source)
    forms = []
    for position, key in enumerate(keys):
        at = ItemSource(listed, position)
        _read_key(run, at, key)
        form = key_form(run, key)
        forms.append(form if form is not None else KeyPath(at))
    return tuple(forms)


def _read_key(run: Any, source: Source, key: Any, depth: int = 0) -> None:
    """One key, read where it is: a tuple of classes or objects item by item (a tuple
    that is not a literal is otherwise checked by its type only)."""
    if type(key) is tuple and not is_literal(key) and depth < 4:
        run.read(LenSource(source), len(key), symbolic=False)
        for position, part in enumerate(key):
            _read_key(run, ItemSource(source, position), part, depth + 1)
    else:
        run.read(source, key, symbolic=False)
