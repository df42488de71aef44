"""Predicated control flow: rewrite a two-way ``if`` on a tensor into ``torch.where`` selects.

The plan for ``if c: <then> else: <else>`` (GraphMend's first transformation):

1. every name a branch assigns is renamed inside that branch
   (``y`` -> ``y_if_true``), so computing both branches one after the other
   never clobbers a value the other branch or the condition reads;
2. the renamed statements of both branches are hoisted (run unconditionally);
3. each name that is live after the ``if`` is selected:
   ``y = torch.where(c, y_if_true, y_if_false)``; a name only one branch
   assigns keeps its previous value on the other side;
4. a hoisted value used once, by a select, is inlined into it when nothing
   it reads has been rebound by then, which turns the common
   ``if c: y = a else: y = b`` into ``y = torch.where(c, a, b)``.

Every condition of legality is checked by :func:`plan`; a failed one raises
:class:`Refusal` with the reason in words, :class:`Unspeculatable` when the
only obstacle is a branch that must not run untaken (then the rule tries the
``torch.cond`` form of :mod:`fullgraph.refactors.rewrites.cond_form`).  This module
builds code strings from nodes; the rule turns them into libcst statements.
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from ..analyses.bindings import names_in
from ..analyses.purity import Impurity, check_speculatable, torch_names
from ..analyses.tensor_kinds import Kind
from ..analyses.tensor_types import TensorTypes
from ..fast_tree import fast_visit
from .site import Refusal, RewriteSite, Unspeculatable
from .untaken import guard_untaken

RETURN = "<return>"
# Reductions that give one value when called without a dimension.
SCALAR_METHODS = frozenset(
    {
        "any",
        "all",
        "sum",
        "mean",
        "max",
        "min",
        "norm",
        "prod",
        "std",
        "var",
        "amax",
        "amin",
        "median",
        "count_nonzero",
        "logsumexp",
        "nansum",
        "nanmean",
    }
)
SCALAR_TORCH = frozenset(f"torch.{name}" for name in SCALAR_METHODS)
BOOLEAN_REDUCTIONS = frozenset({"any", "all"})


def fresh_names(taken: set[str]):
    """A function giving names that are not in ``taken`` and not given before."""
    used = set(taken)

    def fresh(base: str) -> str:
        candidate, counter = base, 2
        while candidate in used:
            candidate, counter = f"{base}_{counter}", counter + 1
        used.add(candidate)
        return candidate

    return fresh


@dataclasses.dataclass
class Branch:
    """One branch's statements as (target, value) pairs; target RETURN for ``return``."""

    assignments: list[tuple[str, cst.BaseExpression]]
    # The branch's statement lines as written (the torch.cond form keeps them, comments too).
    lines: list[cst.SimpleStatementLine] = dataclasses.field(default_factory=list)

    @property
    def names(self) -> list[str]:
        return [t for t, _ in self.assignments if t != RETURN]

    @property
    def returns(self) -> bool:
        return bool(self.assignments) and self.assignments[-1][0] == RETURN


class _Rename(cst.CSTTransformer):
    def __init__(self, mapping: dict[str, str]) -> None:
        super().__init__()
        self.mapping = mapping

    def leave_Attribute(self, original_node, updated_node):
        # ``x.y``: only ``x`` is a variable; the attribute name must stay.
        return updated_node.with_changes(attr=original_node.attr)

    def leave_Name(self, original_node, updated_node):
        if original_node.value in self.mapping:
            return updated_node.with_changes(value=self.mapping[original_node.value])
        return updated_node


def rename(node: cst.BaseExpression, mapping: dict[str, str]) -> cst.BaseExpression:
    return node.visit(_Rename(mapping)) if mapping else node


def branch_from_block(block: cst.BaseSuite, label: str) -> Branch:
    """The branch's assignments, or a :class:`Refusal` naming the statement that prevents it."""
    if isinstance(block, cst.SimpleStatementSuite):
        smalls = list(block.body)
        lines = [
            cst.SimpleStatementLine(body=smalls, trailing_whitespace=block.trailing_whitespace)
        ]
    else:
        smalls, lines = [], []
        for statement in block.body:
            if not isinstance(statement, cst.SimpleStatementLine):
                kind = type(statement).__name__.lower()
                raise Refusal(f"the {label} branch contains a nested `{kind}` statement")
            smalls.extend(statement.body)
            lines.append(statement)
    assignments: list[tuple[str, cst.BaseExpression]] = []
    for index, small in enumerate(smalls):
        if isinstance(small, cst.Pass):
            continue
        if isinstance(small, cst.Assign):
            if len(small.targets) != 1 or not isinstance(small.targets[0].target, cst.Name):
                raise Refusal(f"the {label} branch stores to something other than a plain name")
            assignments.append((small.targets[0].target.value, small.value))
        elif (
            isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and small.value
        ):
            assignments.append((small.target.value, small.value))
        elif isinstance(small, cst.Return):
            if small.value is None or index != len(smalls) - 1:
                raise Refusal(f"the {label} branch returns early")
            assignments.append((RETURN, small.value))
        elif isinstance(small, cst.AugAssign):
            raise Refusal(
                f"the {label} branch updates a value in place (augmented assignment); "
                "hoisted statements must be effect-free"
            )
        elif isinstance(small, cst.Raise):
            raise Refusal(f"the {label} branch raises; hoisted code cannot contain `raise`")
        elif isinstance(small, (cst.Break, cst.Continue)):
            raise Refusal(f"the {label} branch contains `break`/`continue`")
        elif isinstance(small, cst.Expr):
            raise Refusal(
                f"the {label} branch has an expression statement (a call for its effect); "
                "hoisted statements must be effect-free"
            )
        else:
            raise Refusal(f"the {label} branch contains a `{type(small).__name__}` statement")
    return Branch(assignments, lines)


def is_boolean(
    node: cst.BaseExpression,
    types: TensorTypes,
    qualified_names,
    seen: frozenset[str] = frozenset(),
) -> bool:
    """Whether ``node`` is provably a ``torch.bool`` tensor (torch.cond's predicate)."""
    if isinstance(node, cst.Name) and node.value not in seen:
        values = types.assigned.get(node.value, [])
        return bool(values) and all(
            v is not None and is_boolean(v, types, qualified_names, seen | {node.value})
            for v in values
        )
    if isinstance(node, cst.Comparison):
        return len(node.comparisons) == 1 and not isinstance(
            node.comparisons[0].operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)
        )
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in BOOLEAN_REDUCTIONS:
            return not node.args and types.is_tensor(func.value)
        return bool(torch_names(qualified_names, func) & {"torch.any", "torch.all"}) and (
            len(node.args) == 1
        )
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.BitInvert):
        return is_boolean(node.expression, types, qualified_names, seen)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.BitAnd, cst.BitOr)):
        return is_boolean(node.left, types, qualified_names, seen) and is_boolean(
            node.right, types, qualified_names, seen
        )
    return False


def is_single_value(
    node: cst.BaseExpression,
    types: TensorTypes,
    qualified_names,
    seen: frozenset[str] = frozenset(),
) -> bool:
    """Whether ``node`` is provably a tensor with one element (or a Python number)."""
    if isinstance(node, cst.BaseNumber):
        return True
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in SCALAR_METHODS and not node.args:
            return types.is_tensor(func.value)
        return (
            bool(qualified_names(func) & SCALAR_TORCH)
            and len(node.args) == 1
            and (node.args[0].keyword is None)
        )
    if isinstance(node, cst.Comparison):
        parts = [node.left, *(t.comparator for t in node.comparisons)]
        return all(is_single_value(p, types, qualified_names, seen) for p in parts)
    if isinstance(node, cst.BinaryOperation):
        return is_single_value(node.left, types, qualified_names, seen) and is_single_value(
            node.right, types, qualified_names, seen
        )
    if isinstance(node, cst.UnaryOperation) and not isinstance(node.operator, cst.Not):
        return is_single_value(node.expression, types, qualified_names, seen)
    if isinstance(node, cst.Name) and node.value not in seen:
        values = types.assigned.get(node.value, [])
        return bool(values) and all(
            v is not None and is_single_value(v, types, qualified_names, seen | {node.value})
            for v in values
        )
    return False


def check_no_inplace_layer(node: cst.BaseExpression, layers: dict, code) -> None:
    """Raise :class:`Impurity` if ``node`` calls a layer built to update its input in place.

    ``layers`` maps ``self.<attr>`` to :class:`fullgraph.refactors.rewrites.same_metadata.Layer`;
    ``self.act = nn.ReLU(inplace=True)`` is pure by its class, but running it untaken
    would change the tensor the other branch reads.
    """

    class _Calls(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> None:
            func = call.func
            if (
                isinstance(func, cst.Attribute)
                and isinstance(func.value, cst.Name)
                and func.value.value == "self"
                and getattr(layers.get(func.attr.value), "inplace", False)
            ):
                raise Impurity(f"`{code(call)}` updates its input in place")

    fast_visit(node, _Calls())


def not_a_tensor(condition: cst.BaseExpression, types: TensorTypes, code) -> str:
    """Why a condition cannot be used as a tensor, in words."""
    if types.kind(condition) is Kind.UNKNOWN:
        return (
            f"the condition `{code(condition)}` is not provably a tensor (it depends on values "
            "whose type the source does not show, such as submodule results; annotate them)"
        )
    return (
        f"the condition `{code(condition)}` is a Python bool computed from tensor data, not a "
        "tensor that torch.where can select with"
    )


def not_boolean(condition: cst.BaseExpression, code) -> str:
    return (
        f"the condition `{code(condition)}` is not provably a boolean tensor (torch.where and "
        "torch.cond take a torch.bool condition; write a comparison such as `!= 0`)"
    )


@dataclasses.dataclass
class Plan:
    """What to emit: a condition binding, hoisted assignments and the selects."""

    condition_code: str
    condition_name: str | None
    hoisted: list[tuple[str, str]]
    # (target or RETURN, code when true, code when false)
    selects: list[tuple[str, str, str]]

    def statements(self, torch: str) -> list[cst.SimpleStatementLine]:
        """The plan as statements; ``torch`` is how the file spells the module."""
        lines = []
        condition = self.condition_code
        if self.condition_name:
            lines.append(f"{self.condition_name} = {condition}")
            condition = self.condition_name
        lines.extend(f"{target} = {value}" for target, value in self.hoisted)
        for target, when_true, when_false in self.selects:
            select = f"{torch}.where({condition}, {when_true}, {when_false})"
            lines.append(f"return {select}" if target == RETURN else f"{target} = {select}")
        return [cst.parse_statement(line + "\n") for line in lines]


def plan(
    condition: cst.BaseExpression,
    then: Branch,
    otherwise: Branch | None,
    site: RewriteSite,
    *,
    torch: str = "torch",
) -> Plan:
    """Check every legality condition and lay out the rewrite (or raise :class:`Refusal`).

    ``torch`` is how the file spells the torch module (for the guards of
    :mod:`fullgraph.refactors.rewrites.untaken`).
    """
    types, qualified_names, code = site.types, site.qualified_names, site.code
    live, defined_before = site.live, site.defined_before
    if not types.is_tensor(condition):
        raise Refusal(not_a_tensor(condition, types, code))
    if not is_single_value(condition, types, qualified_names):
        raise Refusal(
            f"the condition `{code(condition)}` is not provably a single value "
            "(torch.where would broadcast it instead of raising like `if` does)"
        )
    if not is_boolean(condition, types, qualified_names):
        raise Refusal(not_boolean(condition, code))
    otherwise = otherwise or Branch([])
    if then.returns != otherwise.returns:
        raise Refusal("only one branch returns; the other path continues after the `if`")
    for _, value in then.assignments + otherwise.assignments:
        try:
            check_speculatable(value, types, qualified_names, code)
            check_no_inplace_layer(value, site.layers, code)
        except Impurity as impurity:
            raise Unspeculatable(
                f"the untaken branch could fault or have an effect: {impurity}"
            ) from None

    fresh = fresh_names(site.taken_names)
    # Operands the untaken branch must not see (a zero divisor, the log of zero) are
    # replaced there by a safe value, selecting on the condition bound to a fresh name
    # (the branches' renaming never touches it).
    guard_name: str | None = None
    guards = 0

    def guarded(value: cst.BaseExpression, taken_when_true: bool) -> cst.BaseExpression:
        nonlocal guards

        def guard(operand: cst.BaseExpression, safe: str) -> cst.BaseExpression:
            nonlocal guard_name
            guard_name = guard_name or fresh("condition")
            sides = (code(operand), safe) if taken_when_true else (safe, code(operand))
            return cst.parse_expression(f"{torch}.where({guard_name}, {sides[0]}, {sides[1]})")

        try:
            value, count = guard_untaken(value, types, qualified_names, code, guard)
        except Impurity as impurity:
            raise Unspeculatable(
                f"the untaken branch could fault or poison gradients: {impurity}"
            ) from None
        guards += count
        return value

    hoisted: list[tuple[str, cst.BaseExpression]] = []
    # Tensor kinds are judged on the original (un-renamed) values.
    original_values: dict[str, cst.BaseExpression] = {}
    finals: list[dict[str, str]] = []
    for branch, suffix in ((then, "if_true"), (otherwise, "if_false")):
        mapping: dict[str, str] = {}
        for target, value in branch.assignments:
            original = value
            value = rename(guarded(value, suffix == "if_true"), mapping)
            if target == RETURN:
                hoisted.append((fresh(f"result_{suffix}"), value))
                mapping[RETURN] = hoisted[-1][0]
            else:
                mapping[target] = fresh(f"{target}_{suffix}")
                hoisted.append((mapping[target], value))
            original_values[hoisted[-1][0]] = original
        finals.append(mapping)
    true_final, false_final = finals

    selects: list[tuple[str, str, str]] = []
    ordered = list(dict.fromkeys([*then.names, *otherwise.names]))
    for name in ordered:
        in_true, in_false = name in true_final, name in false_final
        if not (in_true and in_false) and name not in live:
            continue  # a temporary of one branch: renamed, never selected
        if not (in_true and in_false) and name not in defined_before:
            side = "true" if in_true else "false"
            raise Refusal(
                f"`{name}` is bound only when the condition is {side}; both branches must "
                "bind the same names"
            )
        if name not in live:
            continue
        selects.append((name, true_final.get(name, name), false_final.get(name, name)))
    if then.returns:
        selects.append((RETURN, true_final[RETURN], false_final[RETURN]))

    for target, when_true, when_false in selects:
        for ref in (when_true, when_false):
            if not types.is_tensor(original_values.get(ref, cst.Name(ref))):
                label = "the returned value" if target == RETURN else f"`{target}`"
                raise Refusal(f"{label} is not known to be a tensor in both branches")
    return _layout(condition, hoisted, selects, code=code, fresh=fresh, guard_name=guard_name)


def _layout(condition, hoisted, selects, *, code, fresh, guard_name=None) -> Plan:
    # Inline a hoisted value into the select that is its only use, when no
    # earlier select has rebound a name it reads.
    uses: dict[str, int] = {}
    for _, value in hoisted:
        for name in names_in(value):
            uses[name] = uses.get(name, 0) + 1
    for _, when_true, when_false in selects:
        for ref in (when_true, when_false):
            uses[ref] = uses.get(ref, 0) + 1
    values = dict(hoisted)
    inlined: dict[str, str] = {}
    rebound: set[str] = set()
    for target, when_true, when_false in selects:
        for ref in (when_true, when_false):
            if ref in values and uses.get(ref) == 1 and not (names_in(values[ref]) & rebound):
                inlined[ref] = code(values[ref])
        rebound.add(target)
    remaining = [(t, code(v)) for t, v in hoisted if t not in inlined]
    condition_code = code(condition)
    condition_name = None
    needs_binding = len(selects) > 1 or remaining
    rebinds_condition = isinstance(condition, cst.Name) and condition.value in rebound
    if guard_name is not None:
        condition_name = guard_name  # the guards read it
    elif needs_binding and (rebinds_condition or not isinstance(condition, cst.Name)):
        condition_name = fresh("condition")
    elif isinstance(condition, cst.Name):
        condition_code = condition.value
    final = [(t, inlined.get(a, a), inlined.get(b, b)) for t, a, b in selects]
    return Plan(condition_code, condition_name, remaining, final)


# -- conditional expressions -----------------------------------------------------------


def select_expression(node: cst.IfExp, site: RewriteSite, torch: str) -> cst.BaseExpression:
    """``a if c else b`` as ``torch.where(c, a, b)``, or :class:`Refusal`.

    The operands the untaken side must not see are guarded; an expression binds
    no name to hold the condition, so the guards repeat it (it is effect-free: it
    was evaluated before either side in the original).
    """
    types, names, code = site.types, site.qualified_names, site.code
    if not types.is_tensor(node.test):
        raise Refusal(not_a_tensor(node.test, types, code))
    if not is_single_value(node.test, types, names):
        raise Refusal(f"the condition `{code(node.test)}` is not provably a single value")
    if not is_boolean(node.test, types, names):
        raise Refusal(not_boolean(node.test, code))
    for value in (node.body, node.orelse):
        if not types.is_tensor(value):
            raise Refusal(f"`{code(value)}` is not known to be a tensor")
    for value in (node.body, node.orelse):
        try:
            check_speculatable(value, types, names, code)
            check_no_inplace_layer(value, site.layers, code)
        except Impurity as impurity:
            raise Unspeculatable(
                f"the untaken branch could fault or have an effect: {impurity}"
            ) from None
    test = code(node.test)
    sides = []
    for value, taken_when_true in ((node.body, True), (node.orelse, False)):

        def guard(operand, safe, taken_when_true=taken_when_true):
            pair = (code(operand), safe) if taken_when_true else (safe, code(operand))
            return cst.parse_expression(f"{torch}.where({test}, {pair[0]}, {pair[1]})")

        try:
            guarded, _ = guard_untaken(value, types, names, code, guard)
        except Impurity as impurity:
            raise Unspeculatable(
                f"the untaken branch could fault or poison gradients: {impurity}"
            ) from None
        sides.append(code(guarded))
    return cst.parse_expression(f"{torch}.where({test}, {sides[0]}, {sides[1]})")
