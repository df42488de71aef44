"""The runtime's generated guards and mocks, spelled so that ``ruff check`` accepts them.

The in-process runtime compiles its guard and mock text and never shows it to
a linter; the standalone wrapper module is a file in the user's project.  Four
spellings of that text are flagged by ruff's default rules; each is rewritten
here into one that means exactly the same (comments are kept):

- ``bool((x))`` -> ``bool(x)`` (extraneous parentheses, UP034);
- ``not (a == b)`` -> ``not bool(a == b)`` (SIM201/SIM202 would ask for ``a != b``,
  which is another method call on objects whose ``__ne__`` is their own);
- ``setattr(M, 'name', v)`` as a statement -> ``M.name = v`` (B010);
- a local assigned and never read: ``c1 = made[1] = f()`` -> ``made[1] = f()``
  (F841).

``tidy`` also renames the constants whose names the wrapper module needs for
itself (a program's function called ``compile``).
"""

from __future__ import annotations

import keyword

import libcst as cst


def tidy(source: str, renames: dict[str, str] | None = None) -> str:
    """``source`` (one or more generated functions) with the four spellings rewritten,
    and the globals named in ``renames`` renamed (``{"compile": "k_compile"}``)."""
    module = cst.parse_module(source)
    if renames:
        module = module.visit(_Rename(renames))
    return module.visit(_Tidy()).code


class _Rename(cst.CSTTransformer):
    """Renames names read as variables (not attributes, keywords or parameters)."""

    def __init__(self, renames: dict[str, str]):
        self.renames = renames

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        new = self.renames.get(updated_node.value)
        return updated_node.with_changes(value=new) if new else updated_node

    def leave_Attribute(self, original_node, updated_node):
        return updated_node.with_changes(attr=original_node.attr)

    def leave_Arg(self, original_node, updated_node):
        return updated_node.with_changes(keyword=original_node.keyword)

    def leave_Param(self, original_node, updated_node):
        return updated_node.with_changes(name=original_node.name)

    def leave_FunctionDef(self, original_node, updated_node):
        return updated_node.with_changes(name=original_node.name)


class _Tidy(cst.CSTTransformer):
    def __init__(self) -> None:
        self.unused: list[set[str]] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        counts: dict[str, int] = {}
        node.body.visit(_NameCounter(counts))
        assigned = _AssignedNames()
        node.body.visit(assigned)
        # A name seen once in the body is read nowhere but where it is assigned.
        self.unused.append({name for name in assigned.names if counts.get(name) == 1})
        return True

    def leave_FunctionDef(self, original_node, updated_node):
        self.unused.pop()
        return updated_node

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if len(updated_node.args) != 1:
            return updated_node
        (arg,) = updated_node.args
        value = arg.value
        if (
            arg.keyword is None
            and not arg.star
            and value.lpar
            and not isinstance(value, (cst.Tuple, cst.GeneratorExp))
        ):
            value = value.with_changes(lpar=value.lpar[1:], rpar=value.rpar[1:])
            return updated_node.with_changes(args=[arg.with_changes(value=value)])
        return updated_node

    def leave_UnaryOperation(self, original_node, updated_node) -> cst.BaseExpression:
        operand = updated_node.expression
        if (
            isinstance(updated_node.operator, cst.Not)
            and isinstance(operand, cst.Comparison)
            and operand.lpar
            and len(operand.comparisons) == 1
            and isinstance(operand.comparisons[0].operator, (cst.Equal, cst.NotEqual))
        ):
            bare = operand.with_changes(lpar=[], rpar=[])
            call = cst.Call(func=cst.Name("bool"), args=[cst.Arg(value=bare)])
            return updated_node.with_changes(
                expression=call, operator=cst.Not(whitespace_after=cst.SimpleWhitespace(" "))
            )
        return updated_node

    def leave_SimpleStatementLine(self, original_node, updated_node):
        body = [self._statement(s) for s in updated_node.body]
        return updated_node.with_changes(body=body)

    def _statement(self, statement: cst.BaseSmallStatement) -> cst.BaseSmallStatement:
        if isinstance(statement, cst.Expr) and isinstance(statement.value, cst.Call):
            assignment = _setattr_assignment(statement.value)
            if assignment is not None:
                return assignment
        if isinstance(statement, cst.Assign) and self.unused:
            targets = [
                t
                for t in statement.targets
                if not (isinstance(t.target, cst.Name) and t.target.value in self.unused[-1])
            ]
            if not targets:
                return cst.Expr(value=statement.value)
            if len(targets) != len(statement.targets):
                return statement.with_changes(targets=targets)
        return statement


def _setattr_assignment(call: cst.Call) -> cst.Assign | None:
    """``obj.name = value`` for ``setattr(obj, 'name', value)``, or None."""
    if not (isinstance(call.func, cst.Name) and call.func.value == "setattr"):
        return None
    if len(call.args) != 3 or any(a.keyword or a.star for a in call.args):
        return None
    target, name, value = (a.value for a in call.args)
    if not isinstance(name, cst.SimpleString):
        return None
    attribute = name.evaluated_value
    if not (
        isinstance(attribute, str) and attribute.isidentifier() and not keyword.iskeyword(attribute)
    ):
        return None
    return cst.Assign(
        targets=[cst.AssignTarget(target=cst.Attribute(value=target, attr=cst.Name(attribute)))],
        value=value,
    )


class _NameCounter(cst.CSTVisitor):
    def __init__(self, counts: dict[str, int]):
        self.counts = counts

    def visit_Name(self, node: cst.Name) -> None:
        self.counts[node.value] = self.counts.get(node.value, 0) + 1

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)  # the attribute's own name is no read of a local
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)  # nor is a keyword argument's name
        return False


class _AssignedNames(cst.CSTVisitor):
    """Names assigned by plain ``name = ...`` statements (the generated locals)."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        if isinstance(node.target, cst.Name):
            self.names.add(node.target.value)
