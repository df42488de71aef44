"""Sizes the program holds while the monitor follows sizes symbolically.

A size read from a tensor whose size varies (``x.shape``, ``len(x)``) is a
:class:`SizeInt`: an ``int`` that carries an expression over the input sizes
(:class:`SizeLeaf`, :class:`SizeOp`).  Its own methods build larger
expressions (``b * s``), record comparisons as guard conditions, and pin the
exact value wherever the number itself is needed; :mod:`~fullgraph.runtime.symbolic.size_pinning` catches the places where
native code reads an int's value without calling any of its methods.  The fake run that computes the
expressions is :mod:`fullgraph.runtime.symbolic.shapes`.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from fullgraph.runtime.sources import Source, source_class
from fullgraph.runtime.symbolic.scalars import Sym
from fullgraph.runtime.torch_internals import tree_flatten, tree_unflatten

if TYPE_CHECKING:
    from fullgraph.runtime.symbolic.shapes import ShapeTracker


# -- size expressions ---------------------------------------------------------
@dataclasses.dataclass(frozen=True, eq=False)
class SizeLeaf:
    """Dimension ``dim`` of the input tensor reached through ``source``."""

    source: Source
    dim: int
    tensor: torch.Tensor

    def text(self) -> str:
        return f"{self.source.expr()}.shape[{self.dim}]"


@dataclasses.dataclass(frozen=True, eq=False)
class SizeOp:
    """``left <symbol> right`` over size expressions and plain ints."""

    symbol: str
    left: Any
    right: Any

    def text(self) -> str:
        return f"({_text(self.left)} {self.symbol} {_text(self.right)})"


SizeExpr = SizeLeaf | SizeOp


@source_class
class CalloutResultSource(Source):
    """A tensor a callout returned (``nonzero``, ``x[mask]``), as the mock names it."""

    index: int
    path: tuple = ()

    def expr(self) -> str:
        return f"leaves(c{self.index})[{self.path[0]}]" if self.path else f"c{self.index}"


def depth_of(expr: Any) -> int:
    """Index of the latest callout a size expression depends on (-1: only the inputs)."""
    if isinstance(expr, SizeLeaf):
        return expr.source.index if isinstance(expr.source, CalloutResultSource) else -1
    if isinstance(expr, SizeOp):
        return max(depth_of(expr.left), depth_of(expr.right))
    return -1


_OPERATORS: dict[str, Callable] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "//": operator.floordiv,
    "%": operator.mod,
}


def _text(expr: Any) -> str:
    return expr.text() if isinstance(expr, (SizeLeaf, SizeOp)) else repr(expr)


def evaluate_size(
    expr: Any, leaf: Callable[[SizeLeaf], Any], apply: Callable = lambda fn, a, b: fn(a, b)
) -> Any:
    """``expr`` with each leaf replaced by ``leaf(...)`` and each operator applied by ``apply``."""
    if isinstance(expr, SizeLeaf):
        return leaf(expr)
    if isinstance(expr, SizeOp):
        left = evaluate_size(expr.left, leaf, apply)
        right = evaluate_size(expr.right, leaf, apply)
        return apply(_OPERATORS[expr.symbol], left, right)
    return expr


class SizeSym(Sym):
    """A size expression as a symbolic value for guard conditions."""

    def __init__(self, value: Any, text: str, depth: int = -1):
        self.value = value
        self._text = text
        self.depth = depth  # checked on entry (-1) or right after that callout

    def expr(self) -> str:
        return self._text

    def leaves(self) -> list:
        return []

    def callout_depth(self) -> int:
        return self.depth


# -- sizes the program holds ------------------------------------------------
class SizeInt(int):
    """A tensor size read by the program: an ``int`` that knows where it came from."""

    def __new__(cls, value: int, expr: SizeExpr, tracker: ShapeTracker):
        self = super().__new__(cls, value)
        self.expr = expr
        self.tracker = tracker
        return self

    @property
    def plain(self) -> int:
        return int.__int__(self)

    @property
    def __class__(self):  # ``n.__class__ is int`` as for eager's size (``type(n)``: calls.py)
        return int

    def _combine(self, other: Any, symbol: str, reflected: bool = False):
        if self.tracker.closed:  # the run is over: an ordinary int from now on
            left, right = (other, self.plain) if reflected else (self.plain, other)
            plain_right = right.plain if isinstance(right, SizeInt) else right
            plain_left = left.plain if isinstance(left, SizeInt) else left
            return _OPERATORS[symbol](plain_left, plain_right)
        if isinstance(other, (str, bytes, bytearray, list, tuple)):
            self.tracker.concretize(self)  # a sequence repeated by the exact count
            return NotImplemented
        if type(other) is bool or not isinstance(other, int):
            if isinstance(other, float):
                value = float(self._exact())
                return _OPERATORS[symbol](*((other, value) if reflected else (value, other)))
            self.tracker.concretize(self)  # ``n + True``: the other's method reads the int
            return NotImplemented
        right = other.expr if isinstance(other, SizeInt) else int(other)
        plain_other = other.plain if isinstance(other, SizeInt) else int(other)
        if reflected:
            value = _OPERATORS[symbol](plain_other, self.plain)
            return SizeInt(value, SizeOp(symbol, right, self.expr), self.tracker)
        value = _OPERATORS[symbol](self.plain, plain_other)
        return SizeInt(value, SizeOp(symbol, self.expr, right), self.tracker)

    def __add__(self, other):
        return self._combine(other, "+")

    def __radd__(self, other):
        return self._combine(other, "+", reflected=True)

    def __sub__(self, other):
        return self._combine(other, "-")

    def __rsub__(self, other):
        return self._combine(other, "-", reflected=True)

    def __mul__(self, other):
        return self._combine(other, "*")

    def __rmul__(self, other):
        return self._combine(other, "*", reflected=True)

    def __floordiv__(self, other):
        return self._combine(other, "//")

    def __rfloordiv__(self, other):
        return self._combine(other, "//", reflected=True)

    def __mod__(self, other):
        return self._combine(other, "%")

    def __rmod__(self, other):
        return self._combine(other, "%", reflected=True)

    def __neg__(self):
        return SizeInt(-self.plain, SizeOp("*", self.expr, -1), self.tracker)

    def __pos__(self):
        return self

    def _compare(self, other: Any, symbol: str, compare: Callable):
        if type(other) is bool or not isinstance(other, (int, float)):
            if not self.tracker.closed:
                self.tracker.concretize(self)  # ``n == True``: the other's method reads it
            return NotImplemented
        plain_other = other.plain if isinstance(other, SizeInt) else other
        outcome = compare(self.plain, plain_other)
        if self.tracker.closed:
            return outcome
        # An IntEnum member or a numpy float is written as the number it is.
        right = other.expr if isinstance(other, SizeInt) else _plain_number(other)
        depth = max(depth_of(self.expr), depth_of(right))
        self.tracker.condition(f"({self.expr.text()} {symbol} {_text(right)})", outcome, depth)
        return outcome

    def __lt__(self, other):
        return self._compare(other, "<", operator.lt)

    def __le__(self, other):
        return self._compare(other, "<=", operator.le)

    def __gt__(self, other):
        return self._compare(other, ">", operator.gt)

    def __ge__(self, other):
        return self._compare(other, ">=", operator.ge)

    def __eq__(self, other):
        return self._compare(other, "==", operator.eq)

    def __ne__(self, other):
        return self._compare(other, "!=", operator.ne)

    def __bool__(self):
        outcome = self.plain != 0
        if not self.tracker.closed:
            self.tracker.condition(f"({self.expr.text()} != 0)", outcome, depth_of(self.expr))
        return outcome

    def __abs__(self):
        return self if self.plain >= 0 else -self

    def __round__(self, ndigits=None):
        return self if ndigits is None else round(self._exact(), ndigits)

    def __trunc__(self):
        return self

    __floor__ = __ceil__ = __trunc__

    # Every other use needs the exact number: the guard checks it from now on.
    def _exact(self) -> int:
        self.tracker.concretize(self)
        return self.plain

    # Bitwise operators (``d >> 1`` in rotary embeddings): no expression for them, so
    # the size is exact from here on.  int's own would compute a plain int unguarded.
    def _bitwise(self, other: Any, compute: Callable, reflected: bool = False):
        if type(other) is bool or not isinstance(other, int):
            return NotImplemented
        value = other._exact() if isinstance(other, SizeInt) else int(other)
        mine = self._exact()
        return compute(value, mine) if reflected else compute(mine, value)

    def __rshift__(self, other):
        return self._bitwise(other, operator.rshift)

    def __rrshift__(self, other):
        return self._bitwise(other, operator.rshift, reflected=True)

    def __lshift__(self, other):
        return self._bitwise(other, operator.lshift)

    def __rlshift__(self, other):
        return self._bitwise(other, operator.lshift, reflected=True)

    def __and__(self, other):
        return self._bitwise(other, operator.and_)

    def __rand__(self, other):
        return self._bitwise(other, operator.and_, reflected=True)

    def __or__(self, other):
        return self._bitwise(other, operator.or_)

    def __ror__(self, other):
        return self._bitwise(other, operator.or_, reflected=True)

    def __xor__(self, other):
        return self._bitwise(other, operator.xor)

    def __rxor__(self, other):
        return self._bitwise(other, operator.xor, reflected=True)

    def __invert__(self):
        return ~self._exact()

    # int's number protocol: ``n.real`` / ``n.numerator`` are the number itself.
    @property
    def real(self):
        return self

    @property
    def numerator(self):
        return self

    def conjugate(self):
        return self

    def __hash__(self):
        return hash(self._exact())

    def __index__(self):
        return self._exact()

    def __int__(self):
        return self._exact()

    def __float__(self):
        return float(self._exact())

    def __truediv__(self, other):
        return self._exact() / other

    def __rtruediv__(self, other):
        return other / self._exact()

    def __pow__(self, other, modulo=None):
        return pow(self._exact(), other, modulo)

    def __rpow__(self, other):
        return other ** self._exact()

    def __format__(self, spec):
        return format(self._exact(), spec)

    def __str__(self):
        return str(self._exact())

    def __repr__(self):
        return repr(self._exact())

    def __reduce__(self):
        return (int, (self._exact(),))


def size_sym(value: Any) -> SizeSym | None:
    """A symbolic value for a size, or a ``torch.Size``/tuple/list of sizes (None: holds none)."""
    if not holds_size(value) or not isinstance(value, (SizeInt, tuple, list)):
        return None
    depth = max(depth_of(leaf.expr) for leaf in flat_numbers(value) if isinstance(leaf, SizeInt))
    return SizeSym(plain(value), _build_text(value), depth)


def _build_text(value: Any) -> str:
    """Python text that rebuilds ``value`` with each size re-read from the inputs."""
    if isinstance(value, SizeInt):
        return value.expr.text()
    if isinstance(value, (tuple, list)):
        items = "".join(_build_text(item) + ", " for item in value)
        if isinstance(value, torch.Size):
            return f"torch.Size(({items}))"
        return f"[{items}]" if isinstance(value, list) else f"({items})"
    return repr(value)


def holds_size(value: Any) -> bool:
    """Whether ``value`` (a number, slice, ``torch.Size`` or pytree of them) holds a SizeInt."""
    return any(isinstance(leaf, SizeInt) for leaf in flat_numbers(value))


def flat_numbers(value: Any) -> list:
    found = []
    for leaf in tree_flatten(value)[0]:
        if isinstance(leaf, slice):
            found.extend((leaf.start, leaf.stop, leaf.step))
        elif isinstance(leaf, torch.Size):
            found.extend(leaf)
        else:
            found.append(leaf)
    return found


def map_sizes(value: Any, fn: Callable[[SizeInt], Any]) -> Any:
    """``value`` with every SizeInt (also inside slices and ``torch.Size``) replaced by ``fn``."""

    def leaf(item: Any) -> Any:
        if isinstance(item, SizeInt):
            return fn(item)
        if isinstance(item, slice) and holds_size((item.start, item.stop, item.step)):
            return slice(*(leaf(part) for part in (item.start, item.stop, item.step)))
        if isinstance(item, torch.Size) and holds_size(tuple(item)):
            return tuple(leaf(part) for part in item)
        return item

    flat, spec = tree_flatten(value)
    return _restore_sizes(value, tree_unflatten([leaf(item) for item in flat], spec))


def _restore_sizes(original: Any, mapped: Any) -> Any:
    """torch's pytree rebuilds a ``torch.Size`` as a tuple: give the program its
    ``torch.Size`` back wherever it held one (and the numbers are plain ints)."""
    if isinstance(original, torch.Size):
        if isinstance(mapped, tuple) and all(type(p) is int for p in mapped):
            return torch.Size(mapped)
        return mapped
    if type(original) in (tuple, list) and type(mapped) is type(original):
        if len(original) == len(mapped):
            return type(original)(_restore_sizes(a, b) for a, b in zip(original, mapped))
        return mapped
    if hasattr(type(original), "_fields") and type(mapped) is type(original):  # a namedtuple
        if len(original) == len(mapped):
            return type(original)(*(_restore_sizes(a, b) for a, b in zip(original, mapped)))
        return mapped
    if type(original) is dict and type(mapped) is dict:
        return {k: _restore_sizes(original.get(k), v) for k, v in mapped.items()}
    return mapped


def plain(value: Any) -> Any:
    """``value`` with sizes as plain ints, for the real call (no guard added)."""
    return map_sizes(value, lambda size: size.plain)


def _plain_number(value: float) -> float:
    return int(value) if isinstance(value, int) else float(value)
