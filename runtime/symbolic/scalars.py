"""Symbolic scalars: Python numbers whose value may change between calls.

A number the program gets from a callout (``t.item()``, ``time.time()``), a
numeric argument, or a numeric attribute it reads from outside is not baked
into the record as a constant.  The monitor follows it through the frame's
value stack and locals as a small expression (``Sym``):

- arithmetic and comparisons on it build larger expressions;
- an ``if`` on it becomes a *mid-guard* on the truth of the expression, so a
  record is reused for every value that takes the same branch;
- a tensor operation on it *lifts* it into the graph as an input;
- a store of it into external state is replayed by the mock with the
  expression;
- any other use *concretizes* it: the guard checks the exact value.
"""

from __future__ import annotations

import dataclasses
import math
import operator
from typing import Any

from fullgraph.runtime.sources import Source

# BINARY_OP's oparg table is the interpreter's: ``cpython.BINARY_OPS``.
COMPARE = {
    "<": operator.lt,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    ">=": operator.ge,
}
NUMBER_TYPES = (int, float)
# The ints a lifted int can be: it enters the graph as an int64 tensor.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class Sym:
    """A symbolic value; ``value`` is what it was during the monitoring run."""

    value: Any

    def expr(self) -> str:
        raise NotImplementedError

    def leaves(self) -> list[Leaf]:
        raise NotImplementedError

    def callout_depth(self) -> int:
        """Index of the latest callout this value depends on (-1: only the arguments)."""
        return max((leaf.callout for leaf in self.leaves() if leaf.callout is not None), default=-1)


@dataclasses.dataclass(eq=False)
class Leaf(Sym):
    value: Any
    source: Source | None = None  # an argument or an external read
    callout: int | None = None  # or the result of callout #n

    def expr(self) -> str:
        return f"c{self.callout}" if self.callout is not None else self.source.expr()

    def leaves(self) -> list[Leaf]:
        return [self]


@dataclasses.dataclass(eq=False)
class Op(Sym):
    value: Any
    template: str  # e.g. "({0} * {1})"
    operands: tuple  # Sym or plain constants (rendered with repr)

    def expr(self) -> str:
        return self.template.format(*(_operand(o) for o in self.operands))

    def leaves(self) -> list[Leaf]:
        found: list[Leaf] = []
        for operand in self.operands:
            if isinstance(operand, Sym):
                found.extend(operand.leaves())
        return found


def _operand(operand: Any) -> str:
    """An operand as it reads inside a template: a negative constant in parentheses
    (``(-8.0) ** n``: unparenthesized, ``-8.0 ** n`` is ``-(8.0 ** n)``)."""
    if isinstance(operand, Sym):
        return operand.expr()
    if isinstance(operand, float) and not math.isfinite(operand):
        return f"float({str(operand)!r})"  # inf and nan have no literal
    text = repr(operand)
    return f"({text})" if text.startswith("-") else text


def is_symbolic_number(value: Any) -> bool:
    """A number that may follow as a symbol: an int only within the int64 it is lifted into."""
    if type(value) is int:
        return INT64_MIN <= value <= INT64_MAX
    return type(value) in NUMBER_TYPES


@dataclasses.dataclass
class Condition:
    """A check added while the program ran: ``bool(sym)`` (or ``sym == value``) must hold again."""

    sym: Sym
    kind: str  # "truth" or "equal"
    expected: Any
    why: str = "branch on a symbolic value"  # the guard line's comment

    def source(self, literal) -> str:
        if self.kind == "truth":
            return f"bool({self.sym.expr()}) is {bool(self.expected)}"
        return f"{self.sym.expr()} == {literal(self.expected)}"
