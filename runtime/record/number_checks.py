"""Guard checks of scalars that are not plain literals: subclasses, enums, number types.

An instance of an int / float / complex / str / bytes subclass (an ``IntEnum``,
a ``str`` Enum, ``class Width(int)``) or a number such as ``Fraction`` or
``Decimal`` holds a value that C code or untraced library code reads: its type
alone says nothing of it, so the guard checks the value too.
"""

from __future__ import annotations

import copy
import decimal
import enum
import fractions
import math
import numbers
from collections.abc import Callable
from typing import Any

import torch

from fullgraph.runtime.record.codegen import Namespace, literal
from fullgraph.runtime.record.native_leaves import NativeLeaf
from fullgraph.runtime.sources import IterItemsSource, KeysSource

# The builtin scalar types a subclass instance's value lives in, read by C code
# (``Tensor.__mul__``, ``__index__``, ``str.__eq__``) the run does not see.
_SCALAR_BASES = (int, float, complex, str, bytes)
_PLAIN = {  # the value as its base type, whatever the subclass overrides
    int: int.__int__,
    float: float.__float__,
    complex: lambda v: complex(complex.real.__get__(v), complex.imag.__get__(v)),
    str: str.__str__,
    bytes: lambda v: bytes.__getitem__(v, slice(None)),
}


def number_check(
    value: Any, ns: Namespace
) -> tuple[Callable[[str], str], str, NativeLeaf | None] | None:
    """The value check of a scalar that is not a plain literal, or None for other values.

    An instance of an int / float / complex / str / bytes subclass (an ``IntEnum``, a
    ``str`` Enum, ``class Width(int)``) or a number such as ``Fraction`` / ``Decimal``
    holds a value that C code or untraced library code reads (``x * a``,
    ``x.repeat(n)``, ``m == "eval"``, ``float(q)``): its type alone says nothing of
    it.  Enum members are singletons, checked by identity; the others by exact type
    and value (through the base type's own methods when the subclass overrides them).
    """
    if isinstance(value, enum.Enum):
        member = ns.bind(value, f"{type(value).__name__}_{value.name}")
        return (lambda name: f"{name} is {member}"), "enum member", NativeLeaf("id", value)
    kind = type(value)
    base = next((b for b in _SCALAR_BASES if isinstance(value, b)), None)
    if base is not None:
        type_name = ns.name_for(kind)
        plain = _PLAIN[base](value)
        if base is complex or (base is float and (math.isnan(plain) or plain == 0.0)):
            # nan != nan, -0.0 == 0.0: the exact repr tells them apart
            text = base.__repr__(plain)
            return (
                (
                    lambda name: (
                        f"type({name}) is {type_name} and {base.__name__}.__repr__({name}) "
                        f"== {text!r}"
                    )
                ),
                "value (exact)",
                None,
            )
        if kind.__eq__ is base.__eq__:
            return (
                (lambda name: f"type({name}) is {type_name} and {name} == {literal(plain)}"),
                "value",
                NativeLeaf("equals", value),
            )
        return (  # the subclass's own __eq__ is not what C code compares
            (
                lambda name: (
                    f"type({name}) is {type_name} and "
                    f"{base.__name__}.__eq__({name}, {literal(plain)})"
                )
            ),
            "value",
            None,
        )
    if isinstance(value, decimal.Decimal):
        # Decimal('1.0') == Decimal('1.00') (and a signaling NaN raises on ==), yet
        # str() and the arithmetic tell them apart: its string is exact.
        type_name = ns.name_for(kind)
        text = decimal.Decimal.__str__(value)
        if kind.__str__ is decimal.Decimal.__str__:
            return (
                (lambda name: f"type({name}) is {type_name} and str({name}) == {text!r}"),
                "value (exact)",
                None,
            )
        decimal_name = ns.name_for(decimal.Decimal)
        return (
            (
                lambda name: (
                    f"type({name}) is {type_name} and {decimal_name}.__str__({name}) == {text!r}"
                )
            ),
            "value (exact)",
            None,
        )
    if isinstance(value, fractions.Fraction):
        type_name = ns.name_for(kind)
        held = fractions.Fraction(value)  # an exact Fraction of the same value
        sign = "neg" if held.numerator < 0 else ""
        bound = ns.bind(held, f"fraction_{sign}{abs(held.numerator)}_{held.denominator}")
        if kind is fractions.Fraction:
            return (
                (lambda name: f"type({name}) is {type_name} and {name} == {bound}"),
                "value",
                NativeLeaf("equals", held),
            )
        fraction_name = ns.name_for(fractions.Fraction)
        return (
            (
                lambda name: (
                    f"type({name}) is {type_name} and {fraction_name}.__eq__({name}, {bound})"
                )
            ),
            "value",
            None,
        )
    if isinstance(value, numbers.Number) and not isinstance(value, torch.Tensor):
        try:  # another number type: exact type and equality with a copy
            held = copy.copy(value)
            comparable = type(held) is kind and (held == value) is True
        except Exception:  # noqa: BLE001 - not copyable or comparable: as before
            return None
        if not comparable:
            return None
        type_name = ns.name_for(kind)
        bound = ns.bind(held, "number_" + kind.__name__)
        return (
            (lambda name: f"type({name}) is {type_name} and {name} == {bound}"),
            "value",
            NativeLeaf("equals", held),
        )
    return None


def equality_is_loose(value: Any, source: Any) -> bool:
    """Whether ``==`` accepts a value the program could tell apart from ``value`` (the
    guard then compares ``repr``s, which floats' exactness makes strict)."""
    return _loose(value) or _iterated_numbers(value, source)


def _iterated_numbers(value: Any, source: Any) -> bool:
    """The items of a set, deque or dict's keys as iterated (``min(S)``, ``sum(q)``):
    ``(1, 2) == (1.0, 2)``, yet ``x * min(S)`` is int64 for one and float32 for the
    other.  Where each item is read on its own (a tuple by index) its type is checked."""
    return isinstance(source, (IterItemsSource, KeysSource)) and any(
        type(item) in (int, float) for item in value
    )


def _loose(value: Any) -> bool:
    """Whether ``==`` accepts a value the program could tell apart from ``value``: a
    float zero (its sign), or a tuple / frozenset holding a bool, a float or a
    frozenset (``True == 1``, ``-0.0 == 0.0``, a frozenset's iteration order)."""
    if isinstance(value, float):
        return value == 0.0
    if isinstance(value, frozenset):
        return len(value) > 1 or any(_loose(item) or isinstance(item, bool) for item in value)
    if isinstance(value, tuple):
        return any(
            isinstance(item, (bool, float, frozenset)) or _loose(item)
            for item in value
            if isinstance(item, (bool, float, tuple, frozenset))
        )
    return False
