"""Class 22: scalar subclasses and number types.

Arguments whose type subclasses int / float / str / bytes (an ``IntEnum``, an
``IntFlag``, a ``str`` Enum, ``class Width(int)``, a ``str`` subclass) or is a
number type of the standard library (``Fraction``, ``Decimal``) hold a value
that C code (``Tensor.__mul__``, ``__index__``, ``str.__eq__``) or untraced
library code (``Fraction.__float__``, ``Decimal.__str__``) reads: a call with
another value of the same type must not replay the first call's answer, and a
call with an equal value must still replay.  Plain ``enum.Enum`` members too.
"""

from __future__ import annotations

import decimal
import enum
import fractions
import math

import torch
from harness import Call, Case, Do, Env, backends, prog, program_env, run_case


class Act(enum.IntEnum):
    RELU = 1
    TANH = 2
    GELU = 3


class Perm(enum.IntFlag):
    R = 1
    W = 2
    X = 4


class Mode(str, enum.Enum):
    TRAIN = "train"
    EVAL = "eval"


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Width(int):
    pass


class Scale(float):
    pass


class Tag(str):
    pass


class Loose(int):
    """An int whose own ``==`` accepts anything: C code still reads its value."""

    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


def script(values):
    """A call per value, each argument built afresh: equal values in a row replay."""
    return [
        Call(
            lambda env, v=v: (torch.ones(2), v() if callable(v) else v),
            label=repr(v() if callable(v) else v),
        )
        for v in values
    ]


def case(name, fn, values, min_hits):
    return Case(name, lambda: Env(target=fn), script(values), min_hits=min_hits)


def by_intenum(x, a):
    return x * a, int(a)


@backends()
def test_intenum_scales(backend):
    values = [Act.RELU, Act.RELU, Act.TANH, Act.TANH, Act.GELU, Act.RELU]
    run_case(case("intenum_scales", by_intenum, values, min_hits=3), backend)


def by_intflag(x, p):
    return x * p


@backends()
def test_intflag_scales(backend):
    # A composite flag constant is written into the graph as the int torch reads (its
    # repr ``Perm.R|W`` is no Python): it replays like a single flag.
    values = [Perm.R, Perm.R, Perm.W, Perm.W, Perm.R | Perm.W, Perm.R | Perm.W, Perm.X, Perm.R]
    run_case(case("intflag_scales", by_intflag, values, min_hits=4), backend)


class Repeats:
    """Not an int, but usable as one (``__index__``), as torch's argument parser takes it."""

    def __init__(self, n):
        self.n = n

    def __index__(self):
        return self.n


def by_index_object(x, n):
    return x.repeat(n)


@backends()
def test_an_object_with_index_as_a_size(backend):
    values = [Repeats(2), Repeats(2), Repeats(3), Repeats(3)]
    run_case(case("object_with_index_as_a_size", by_index_object, values, min_hits=2), backend)


def by_strenum(x, m):
    return x * 0.5 if m == "eval" else x + 1


@backends()
def test_str_enum_compared_with_str(backend):
    values = [Mode.TRAIN, Mode.TRAIN, Mode.EVAL, Mode.EVAL, Mode.TRAIN]
    run_case(case("str_enum_compared_with_str", by_strenum, values, min_hits=3), backend)


def by_plain_enum(x, c):
    return x * 2 if c is Color.RED else x - 1, c.value


@backends()
def test_plain_enum_member(backend):
    values = [Color.RED, Color.RED, Color.BLUE, Color.BLUE, Color.RED]
    run_case(case("plain_enum_member", by_plain_enum, values, min_hits=3), backend)


def by_int_subclass(x, n):
    return x.repeat(n)


@backends()
def test_int_subclass_as_size(backend):
    values = [lambda: Width(1), lambda: Width(1), lambda: Width(3), lambda: Width(3), Width(2)]
    run_case(case("int_subclass_as_size", by_int_subclass, values, min_hits=2), backend)


@backends()
def test_int_subclass_with_own_eq(backend):
    values = [lambda: Loose(2), lambda: Loose(2), lambda: Loose(5), lambda: Loose(5)]
    run_case(case("int_subclass_with_own_eq", by_int_subclass, values, min_hits=2), backend)


def by_float_subclass(x, s):
    return x * s, math.copysign(1.0, s)


@backends()
def test_float_subclass_scales(backend):
    values = [
        lambda: Scale(0.5),
        lambda: Scale(0.5),
        lambda: Scale(0.25),
        lambda: Scale(0.25),
        lambda: Scale(0.0),
        lambda: Scale(-0.0),
        lambda: Scale(-0.0),
    ]
    run_case(case("float_subclass_scales", by_float_subclass, values, min_hits=3), backend)


def by_str_subclass(x, t):
    return x + 1 if t == "add" else x - 1, t.upper()


@backends()
def test_str_subclass_compared_with_eq(backend):
    values = [
        lambda: Tag("add"),
        lambda: Tag("add"),
        lambda: Tag("sub"),
        lambda: Tag("sub"),
        lambda: Tag("add"),
    ]
    run_case(case("str_subclass_compared_with_eq", by_str_subclass, values, min_hits=3), backend)


def by_fraction(x, q):
    return x * float(q)


@backends()
def test_fraction_scales(backend):
    F = fractions.Fraction
    values = [
        lambda: F(1, 2),
        lambda: F(1, 2),
        lambda: F(1, 3),
        lambda: F(1, 3),
        lambda: F(-1, 3),
        lambda: F(1, 2),
    ]
    run_case(case("fraction_scales", by_fraction, values, min_hits=3), backend)


def by_decimal(x, d):
    return x * float(d), str(d)


@backends()
def test_decimal_scales(backend):
    D = decimal.Decimal
    values = [
        lambda: D("0.5"),
        lambda: D("0.5"),
        lambda: D("0.50"),  # equal to 0.5, yet str() tells them apart
        lambda: D("0.25"),
        lambda: D("0.25"),
        lambda: D("0.5"),
    ]
    run_case(case("decimal_scales", by_decimal, values, min_hits=3), backend)


DECIMAL_CONTEXT = """
import decimal
import torch

PRICE = decimal.Decimal("3.14159265358979")

def f(x):
    return x * float(PRICE * decimal.Decimal("1.0000001")), str(-PRICE), str(PRICE.sqrt())
"""


def precision(digits):
    return Do(lambda env: setattr(decimal.getcontext(), "prec", digits), f"prec = {digits}")


@backends()
def test_decimal_arithmetic_follows_the_context(backend):
    # Decimal operators round by the thread's context, which no argument carries
    # (F247): a changed precision must change the result.
    fresh = Call(lambda env: (torch.ones(2),))
    script = [fresh, fresh, precision(3), fresh, fresh, precision(28), fresh]
    try:
        run_case(Case("decimal_arithmetic_context", prog(DECIMAL_CONTEXT), script), backend)
    finally:
        decimal.getcontext().prec = 28


GLOBAL_WIDTH = """
import torch

class Width(int):
    pass

WIDTH = Width(2)

def f(x):
    return x.repeat(WIDTH)
"""


@backends()
def test_int_subclass_global(backend):
    def set_width(n):
        return Do(lambda env: setattr(env.ns, "WIDTH", env.ns.Width(n)), f"WIDTH = Width({n})")

    run_case(
        Case(
            "int_subclass_global",
            lambda: program_env(GLOBAL_WIDTH, "f", "width"),
            [
                Call(lambda env: (torch.ones(2),)),
                Call(lambda env: (torch.ones(2),)),
                set_width(2),  # another object, the same value: still replays
                Call(lambda env: (torch.ones(2),)),
                set_width(3),
                Call(lambda env: (torch.ones(2),)),
                Call(lambda env: (torch.ones(2),)),
            ],
            min_hits=3,
        ),
        backend,
    )
