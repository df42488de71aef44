"""The ``torch.cond`` form of predicated control flow: run only the taken branch.

When a branch calls something that could fault or have an effect if it ran
untaken (an embedding lookup with an index in range for one table only,
dropout's random numbers, a linear-algebra op on a singular matrix), the
``torch.where`` form (:mod:`fullgraph.refactors.rewrites.predication`) cannot hoist it.
``torch.cond`` runs one branch, so those are fine; its own contract (torch
2.13, ``torch/_higher_order_ops/cond.py``) is what this module proves:

- the predicate is a one-element ``torch.bool`` tensor;
- each branch becomes a function of the *operands*, the local tensors the
  branch reads (``self``, numbers and globals are closed over); it returns
  the names live after the ``if`` (a tuple when several), or the value both
  branches return;
- both branches return tensors of identical metadata (dtype, device, layout,
  rank, sizes, stride order) — proven by :class:`MetadataKeys`, from facts in
  :mod:`fullgraph.refactors.analyses.cond_facts`;
- a result must not alias an input (``return x`` is rejected; ``x.clone()``
  is returned instead);
- nothing in a branch mutates an input or a buffer, has a Python side effect
  or breaks the graph: ``torch.cond`` compiles both branches with Dynamo,
  whole-graph, even in eager mode, so a violation raises rather than running
  differently; the checks keep such branches out.

Every failed condition raises :class:`~fullgraph.refactors.rewrites.site.Refusal`
with the reason in words.
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from ..analyses import cond_facts as facts
from ..analyses.bindings import is_self_attribute, reads
from ..analyses.layers import argument_of
from ..analyses.purity import index_parts, torch_names
from ..analyses.tensor_kinds import Kind
from ..analyses.tensor_types import TensorTypes
from ..analyses.torch_facts import DATA_DEPENDENT_BOOL_TORCH
from .predication import (
    RETURN,
    Branch,
    fresh_names,
    is_boolean,
    is_single_value,
    not_boolean,
)
from .same_metadata import MetadataKeys
from .site import Refusal, RewriteSite

# -- what a branch may contain ----------------------------------------------------------


class _Checker:
    """Refuses branch code that torch.cond cannot compile or that has an effect it drops."""

    def __init__(self, types: TensorTypes, qualified_names, code, layers) -> None:
        self.types = types
        self.qualified_names = qualified_names
        self.code = code
        self.layers = layers

    def check(self, node: cst.BaseExpression) -> None:
        code = self.code
        if isinstance(node, (cst.Name, cst.BaseNumber, cst.SimpleString, cst.Ellipsis)):
            return
        if isinstance(node, cst.Attribute):
            self.check(node.value)
        elif isinstance(node, cst.BinaryOperation):
            # Division by zero or a shape mismatch faults only in the branch that runs.
            self.check(node.left)
            self.check(node.right)
        elif isinstance(node, cst.UnaryOperation):
            if isinstance(node.operator, cst.Not):
                raise Refusal(f"`{code(node)}` reads a tensor's value (a graph break)")
            self.check(node.expression)
        elif isinstance(node, cst.Comparison):
            if any(isinstance(c.operator, (cst.In, cst.NotIn)) for c in node.comparisons):
                raise Refusal(f"`{code(node)}` reads a tensor's values (a graph break)")
            self.check(node.left)
            for comparison in node.comparisons:
                self.check(comparison.comparator)
        elif isinstance(node, (cst.Tuple, cst.List)):
            for element in node.elements:
                self.check(element.value)
        elif isinstance(node, cst.Subscript):
            self._check_subscript(node)
        elif isinstance(node, cst.Call):
            self._check_call(node)
        else:
            raise Refusal(f"`{code(node)}` is not an expression the rule can check for torch.cond")

    def _check_subscript(self, node: cst.Subscript) -> None:
        self.check(node.value)
        for element in node.slice:
            for part in index_parts(element):
                if part is None:
                    continue
                if self.types.kind(part) is not Kind.NOT_TENSOR and not isinstance(
                    part, (cst.Ellipsis, cst.BaseNumber)
                ):
                    raise Refusal(
                        f"`{self.code(node)}` indexes with a value that may be a tensor (a "
                        "boolean mask gives a shape that depends on data)"
                    )
                self.check(part)

    def _check_call(self, node: cst.Call) -> None:
        code, func = self.code, node.func
        names = torch_names(self.qualified_names, func)
        if names:
            self._check_torch_call(node, names)
        elif is_self_attribute(func):
            layer = self.layers.get(func.attr.value)
            if layer is None:
                raise Refusal(
                    f"`{code(func)}` is called, and it is not a torch.nn layer built once in "
                    "this class and left alone by its subclasses, so the rule cannot prove it "
                    "free of effects and graph breaks"
                )
            if layer.refusal is not None:
                raise Refusal(f"`{code(func)}` is {layer.refusal}")
        elif isinstance(func, cst.Attribute) and self.types.is_tensor(func.value):
            method = func.attr.value
            if method.endswith("_") and not method.endswith("__"):
                raise Refusal(f"`{code(node)}` updates a tensor in place")
            if method in facts.FORBIDDEN_METHODS:
                raise Refusal(f"`{code(node)}` reads the tensor's value or has an effect")
            if method in facts.DATA_DEPENDENT_SHAPE_METHODS:
                raise Refusal(f"`{code(node)}` has a shape that depends on data")
            self.check(func.value)
        else:
            raise Refusal(
                f"`{code(func)}` is called, and the rule cannot prove it free of Python side "
                "effects and graph breaks"
            )
        for arg in node.args:
            if arg.star:
                raise Refusal(f"`{code(node)}` unpacks arguments with `{arg.star}`")
            self.check(arg.value)

    def _check_torch_call(self, node: cst.Call, torch_names: set[str]) -> None:
        code = self.code
        if torch_names & facts.OUTSIDE_EFFECT_FUNCTIONS:
            raise Refusal(f"`{code(node)}` has an effect outside the graph")
        if torch_names & DATA_DEPENDENT_BOOL_TORCH:
            raise Refusal(f"`{code(node)}` reads tensor data into Python (a graph break)")
        if torch_names & facts.DATA_DEPENDENT_SHAPE_FUNCTIONS:
            raise Refusal(f"`{code(node)}` has a shape that depends on data")
        if any(n.rsplit(".", 1)[-1].endswith("_") for n in torch_names):
            raise Refusal(f"`{code(node)}` updates a tensor in place")
        if any(
            n.startswith("torch.nn.") and not n.startswith("torch.nn.functional.")
            for n in torch_names
        ):
            raise Refusal(f"`{code(node)}` builds a module")
        for name in torch_names & facts.INPLACE_FUNCTION_PARAMETERS.keys():
            argument = argument_of(node, facts.INPLACE_FUNCTION_PARAMETERS[name], "inplace")
            if argument is not None and not (
                isinstance(argument, cst.Name) and argument.value == "False"
            ):
                raise Refusal(f"`{code(node)}` updates a tensor in place")


# -- the plan ---------------------------------------------------------------------------


@dataclasses.dataclass
class CondPlan:
    """``targets = torch.cond(condition, true_name, false_name, (operands…))`` and the two defs."""

    condition: str
    operands: list[str]
    targets: list[str]  # names, or [RETURN]
    true_name: str
    false_name: str
    # Each branch function's body (its kept lines, ending with the return) and the
    # expression it returns (the whole body of a lambda, for a conditional expression).
    true_body: list[cst.SimpleStatementLine]
    false_body: list[cst.SimpleStatementLine]
    true_result: cst.BaseExpression
    false_result: cst.BaseExpression
    # Targets that now hold a copy where the original bound an existing tensor.
    copied: set[str]

    def _call(self, torch: str, true_fn: str, false_fn: str) -> str:
        operands = ", ".join(self.operands) + ("," if len(self.operands) == 1 else "")
        return f"{torch}.cond({self.condition}, {true_fn}, {false_fn}, ({operands}))"

    def statements(self, torch: str) -> list[cst.BaseStatement]:
        """The two branch functions and the statement that calls torch.cond."""
        params = cst.Parameters(params=[cst.Param(cst.Name(name)) for name in self.operands])
        # Blank lines between and after the nested functions, as formatters write them.
        defs = [
            cst.FunctionDef(
                name=cst.Name(name),
                params=params,
                body=cst.IndentedBlock(body=body),
                leading_lines=blank,
            )
            for name, body, blank in (
                (self.true_name, self.true_body, []),
                (self.false_name, self.false_body, [cst.EmptyLine(indent=False)]),
            )
        ]
        call = self._call(torch, self.true_name, self.false_name)
        if self.targets == [RETURN]:
            line = f"return {call}"
        else:
            line = f"{', '.join(self.targets)} = {call}"
        statement = cst.parse_statement(line + "\n").with_changes(
            leading_lines=[cst.EmptyLine(indent=False)]
        )
        return [*defs, statement]

    def expression(self, torch: str, code) -> cst.BaseExpression:
        """The torch.cond call with lambdas, for a conditional expression."""
        params = ", ".join(self.operands)
        head = f"lambda {params}: " if params else "lambda: "
        true_fn, false_fn = head + code(self.true_result), head + code(self.false_result)
        return cst.parse_expression(self._call(torch, true_fn, false_fn))


def _copy(node: cst.BaseExpression) -> cst.BaseExpression:
    if not isinstance(node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
        node = node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.Call(func=cst.Attribute(value=node, attr=cst.Name("clone")))


def plan_cond(
    condition: cst.BaseExpression,
    then: Branch,
    otherwise: Branch | None,
    site: RewriteSite,
) -> CondPlan:
    """Check every condition of the torch.cond form and lay it out (or raise :class:`Refusal`)."""
    types, qualified_names, code, layers = site.types, site.qualified_names, site.code, site.layers
    live, defined_before, taken_names = site.live, site.defined_before, site.taken_names
    if not types.is_tensor(condition) or not is_single_value(condition, types, qualified_names):
        raise Refusal(f"the condition `{code(condition)}` is not provably a one-element tensor")
    if not is_boolean(condition, types, qualified_names):
        raise Refusal(not_boolean(condition, code))
    otherwise = otherwise or Branch([])
    branches = (then, otherwise)
    if then.returns != otherwise.returns:
        raise Refusal("only one branch returns; the other path continues after the `if`")
    checker = _Checker(types, qualified_names, code, layers)
    for label, branch in zip(("true", "false"), branches):
        for _, value in branch.assignments:
            try:
                checker.check(value)
            except Refusal as refusal:
                raise Refusal(f"the {label} branch cannot run in torch.cond: {refusal}") from None
    targets = _targets(then, otherwise, live, defined_before)

    # What each branch binds, in order; and the names it reads from outside itself.
    excluded = frozenset(id(v) for branch in branches for _, v in branch.assignments)
    keys = [MetadataKeys(types, qualified_names, layers, excluded) for _ in branches]
    outside: list[str] = []
    for branch, branch_keys in zip(branches, keys):
        for target, value in branch.assignments:
            outside += [name for name in reads(value) if name not in branch_keys.bound]
            if target != RETURN:
                branch_keys.bind(target, value)
        # A target the branch leaves alone is returned as it was before the `if`.
        outside += [t for t in targets if t != RETURN and t not in branch.names]

    results: list[list[cst.BaseExpression]] = [[], []]
    copied: set[str] = set()
    for target in targets:
        label = "the returned value" if target == RETURN else f"`{target}`"
        pair = []
        for index, (branch, branch_keys) in enumerate(zip(branches, keys)):
            values = [v for t, v in branch.assignments if t == target]
            value = values[-1] if values else cst.Name(target)
            if not types.is_tensor(value if target == RETURN else cst.Name(target)):
                raise Refusal(f"{label} is not known to be a tensor in both branches")
            if target == RETURN or target not in branch_keys.bound:
                fact = branch_keys.fact(value)
            else:
                fact = branch_keys.bound[target]
            result = value if target == RETURN else cst.Name(target)
            if not fact.fresh:
                # torch.cond rejects a result that is an input (or a view of one).
                result = _copy(result)
                copied.add(target)
            results[index].append(result)
            pair.append((value, fact.meta))
        (true_value, true_key), (false_value, false_key) = pair
        if true_key is None or true_key != false_key:
            label = "the returned values" if target == RETURN else f"the values of `{target}`"
            raise Refusal(
                f"{label} (`{code(true_value)}` and `{code(false_value)}`) are not provably of "
                "identical shape, dtype and layout, which torch.cond needs of both branches"
            )

    operands = _operands(outside, branches, types, defined_before)
    fresh = fresh_names(taken_names)
    true_name, false_name = fresh("true_branch"), fresh("false_branch")
    (true_body, true_result), (false_body, false_result) = (
        _body(branch, branch_results, targets) for branch, branch_results in zip(branches, results)
    )
    return CondPlan(
        code(condition),
        operands,
        targets,
        true_name,
        false_name,
        true_body,
        false_body,
        true_result,
        false_result,
        copied - {RETURN},
    )


def _operands(outside: list[str], branches, types: TensorTypes, defined_before: set[str]):
    """The local tensors the branches read from outside themselves, in order of reading."""
    local_names = set(types.env) | set(types.parameters)
    operands = []
    for name in dict.fromkeys(outside):
        if name not in local_names:
            continue  # a global or builtin: the branch function reads it the same way
        rebound = any(name in branch.names for branch in branches)
        if types.is_tensor(cst.Name(name)):
            if name not in defined_before:
                # Passing it would raise NameError on both paths, not only the one reading it.
                raise Refusal(f"`{name}` is read by a branch but not bound before the `if`")
            operands.append(name)
        elif rebound:
            # In the branch function the name is local: reading it first would fail.
            raise Refusal(
                f"`{name}` is read and then rebound in a branch, and it is not a tensor that "
                "can be passed to torch.cond as an operand"
            )
    return operands


def _targets(then: Branch, otherwise: Branch, live: set[str], defined_before: set[str]):
    """What the branch functions return: the names live after the `if`, or [RETURN]."""
    if then.returns:
        return [RETURN]
    targets = []
    true_names, false_names = set(then.names), set(otherwise.names)
    for name in dict.fromkeys([*then.names, *otherwise.names]):
        if name not in live:
            continue  # a temporary of the branches: local to the branch function
        if (name not in true_names or name not in false_names) and name not in defined_before:
            side = "true" if name in true_names else "false"
            raise Refusal(
                f"`{name}` is bound only when the condition is {side}; both branches must "
                "bind the same names"
            )
        targets.append(name)
    if not targets:
        raise Refusal("no value the branches compute is used after the `if`")
    return targets


def _body(branch: Branch, results: list[cst.BaseExpression], targets: list[str]):
    """A branch function's body (the branch's lines, then the return) and what it returns."""
    result = (
        results[0]
        if len(results) == 1
        else cst.Tuple(elements=[cst.Element(r) for r in results], lpar=[], rpar=[])
    )
    lines = [line for line in branch.lines if not all(isinstance(s, cst.Pass) for s in line.body)]
    if targets == [RETURN]:
        if not lines:  # a conditional expression: nothing but the value
            return [cst.SimpleStatementLine(body=[cst.Return(result)])], result
        # The `return` line keeps its comments; only its value may become a copy.
        last = lines[-1]
        returned = last.body[-1].with_changes(value=result)
        return [*lines[:-1], last.with_changes(body=[*last.body[:-1], returned])], result
    if (
        len(lines) == 1
        and len(lines[0].body) == 1
        and [target for target, _ in branch.assignments] == targets
    ):
        # `h = self.up(x)` alone: the function returns the value, keeping the line's comments.
        value = branch.assignments[0][1]
        returned = value if isinstance(result, cst.Name) else _copy(value)
        return [lines[0].with_changes(body=[cst.Return(returned)])], returned
    return [*lines, cst.SimpleStatementLine(body=[cst.Return(result)])], result
