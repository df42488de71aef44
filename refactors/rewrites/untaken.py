"""Guards for the branch ``torch.where`` computes but does not take (the "double where").

Predicated control flow evaluates both branches of an ``if``.  An operation whose
untaken side meets a value outside its domain — a division by zero, the log or
square root of zero or a negative number, a negative or fractional power of
zero — gives the same forward result after ``torch.where`` selects, but its
gradient is ``0 * inf = NaN``, and the NaN flows back into every input of the
branch.  So each such operand is replaced, in its own branch, by
``torch.where(condition, operand, safe)`` (``torch.where(condition, safe,
operand)`` in the false branch): the operand itself where the branch is taken,
so values and gradients there are unchanged, and a value inside the domain
(``safe``) where it is not, so the discarded side stays finite.

A Python number cannot be guarded this way without turning Python arithmetic
into tensor arithmetic (other rounding, other types), so a division or power
whose operand at risk is not a tensor is refused (:class:`Impurity`), and the
rule falls back to ``torch.cond``, which runs only the taken branch.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from ..analyses.purity import Impurity, torch_names
from ..analyses.tensor_kinds import Kind
from ..analyses.tensor_types import TensorTypes

# torch functions (and the tensor methods of the same name) whose first argument
# must lie in a domain, with a value inside it.
DOMAIN_FUNCTIONS: dict[str, str] = {
    "log": "1",
    "log2": "1",
    "log10": "1",
    "log1p": "1",
    "sqrt": "1",
    "rsqrt": "1",
    "reciprocal": "1",
    "acos": "0",
    "arccos": "0",
    "asin": "0",
    "arcsin": "0",
    "atanh": "0",
    "arctanh": "0",
    "acosh": "2",
    "arccosh": "2",
    "lgamma": "1",
    "digamma": "1",
    "polygamma": "1",
    "erfinv": "0",
    "logit": "0.5",
}
# Divisions: the divisor (second argument, or the method's argument) is guarded.
DIVISIONS = frozenset({"div", "divide", "true_divide"})
DOMAIN_TORCH = frozenset(
    f"{namespace}.{name}"
    for namespace in ("torch", "torch.special")
    for name in (*DOMAIN_FUNCTIONS, "pow", *DIVISIONS)
)

# Builds ``torch.where(condition, operand, safe)`` for the branch being guarded.
Guard = Callable[[cst.BaseExpression, str], cst.BaseExpression]


def _is_safe_exponent(node: cst.BaseExpression) -> bool:
    """A literal exponent >= 0 and whole: ``x ** 2`` is finite with a finite gradient anywhere."""
    return isinstance(node, cst.Integer)


def _is_nonzero_literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node = node.expression
    return isinstance(node, (cst.Integer, cst.Float)) and float(node.evaluated_value) != 0


class _Guards(cst.CSTTransformer):
    def __init__(self, types: TensorTypes, qualified_names, code, guard: Guard) -> None:
        super().__init__()
        self.types, self.qualified_names, self.code, self.guard = (
            types,
            qualified_names,
            code,
            guard,
        )
        self.guarded = 0

    def _protect(
        self, original: cst.BaseExpression, updated: cst.BaseExpression, safe: str, what: str
    ):
        if self.types.kind(original) is not Kind.TENSOR:
            raise Impurity(
                f"`{self.code(original)}` {what}, and it is not a tensor that the untaken "
                "branch could replace by a safe value"
            )
        self.guarded += 1
        return self.guard(updated, safe)

    def leave_BinaryOperation(self, original_node, updated_node):
        if isinstance(original_node.operator, cst.Divide):
            if _is_nonzero_literal(original_node.right):
                return updated_node
            right = self._protect(
                original_node.right, updated_node.right, "1", "divides and can be zero"
            )
            return updated_node.with_changes(right=right)
        if isinstance(original_node.operator, cst.Power):
            if _is_safe_exponent(original_node.right):
                return updated_node
            if self.types.kind(original_node.left) is not Kind.TENSOR and (
                self.types.kind(original_node.right) is Kind.TENSOR
            ):
                return updated_node  # 2 ** t: finite for every finite t
            left = self._protect(
                original_node.left,
                updated_node.left,
                "1",
                "is raised to a power that is not a whole number >= 0",
            )
            return updated_node.with_changes(left=left)
        return updated_node

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call):
        func = original_node.func
        names = torch_names(self.qualified_names, func) & DOMAIN_TORCH
        if names:
            short = next(iter(names)).rsplit(".", 1)[-1]
            return self._guard_arguments(original_node, updated_node, short, method=False)
        if isinstance(func, cst.Attribute) and self.types.is_tensor(func.value):
            short = func.attr.value
            if short in DOMAIN_FUNCTIONS or short in DIVISIONS or short == "pow":
                return self._guard_arguments(original_node, updated_node, short, method=True)
        return updated_node

    def _guard_arguments(self, original: cst.Call, updated: cst.Call, short: str, *, method: bool):
        """Guard the operand at risk: the receiver or first argument, or a divisor."""
        if any(arg.keyword is not None or arg.star for arg in original.args):
            raise Impurity(
                f"`{self.code(original)}` takes keyword arguments; the operand at risk in "
                "the untaken branch is not known"
            )
        if method:
            receiver = (original.func.value, updated.func.value)
            operands = [
                receiver,
                *zip([a.value for a in original.args], [a.value for a in updated.args]),
            ]
        else:
            operands = list(zip([a.value for a in original.args], [a.value for a in updated.args]))
        if short in DIVISIONS:
            index, safe, what = 1, "1", "divides and can be zero"
        elif short == "pow":
            if len(operands) > 1 and _is_safe_exponent(operands[1][0]):
                return updated
            index, safe, what = 0, "1", "is raised to a power that is not a whole number >= 0"
        else:
            index, safe, what = (
                0,
                DOMAIN_FUNCTIONS[short],
                f"goes into `{short}`, defined on part of the numbers only",
            )
        if index >= len(operands):
            return updated
        original_operand, updated_operand = operands[index]
        if short in DIVISIONS and _is_nonzero_literal(original_operand):
            return updated
        guarded = self._protect(original_operand, updated_operand, safe, what)
        if method and index == 0:
            return updated.with_changes(func=updated.func.with_changes(value=guarded))
        position = index - 1 if method else index
        args = list(updated.args)
        args[position] = args[position].with_changes(value=guarded)
        return updated.with_changes(args=args)


def guard_untaken(
    value: cst.BaseExpression, types: TensorTypes, qualified_names, code, guard: Guard
) -> tuple[cst.BaseExpression, int]:
    """``value`` with every operand at risk guarded, and how many were (or :class:`Impurity`)."""
    guards = _Guards(types, qualified_names, code, guard)
    guarded = value.visit(guards)
    return guarded, guards.guarded
