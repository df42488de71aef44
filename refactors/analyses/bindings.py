"""Which names a node or a function binds, reads and updates in place.

Plain tree walks, shared by the rules and the rewrites: the names a rewrite
must not reuse, the names live after an ``if``, the names bound on the other
side of it, the tensors a function updates in place.
"""

from __future__ import annotations

import libcst as cst

from ..fast_tree import fast_visit


def names_in(node: cst.CSTNode | None) -> set[str]:
    """Variable names ``node`` mentions (``x`` of ``x.y``, not ``y``)."""
    found: set[str] = set()
    if node is None:
        return found

    class _Names(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            found.add(name.value)

        def visit_Attribute(self, attribute: cst.Attribute) -> bool:
            fast_visit(attribute.value, self)
            return False

    fast_visit(node, _Names())
    return found


def reads(node: cst.BaseExpression) -> list[str]:
    """Variable names ``node`` reads, in order (not attribute names or keywords)."""
    found: list[str] = []

    class _Reads(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            found.append(name.value)

        def visit_Attribute(self, attribute: cst.Attribute) -> bool:
            fast_visit(attribute.value, self)
            return False

        def visit_Arg(self, arg: cst.Arg) -> bool:
            fast_visit(arg.value, self)
            return False

    fast_visit(node, _Reads())
    return found


def is_self_attribute(node: cst.BaseExpression) -> bool:
    return (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == "self"
    )


def mutated_in_place(function: cst.FunctionDef) -> set[str]:
    """Names whose tensor the function updates in place (``x += 1``, ``x.add_(1)``, ``x[i] = v``)."""
    names: set[str] = set()

    class _InPlace(cst.CSTVisitor):
        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            names.update(names_in(node.target))

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            if isinstance(node.target, (cst.Subscript, cst.Attribute)):
                names.update(names_in(node.target.value))

        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            if (
                isinstance(func, cst.Attribute)
                and func.attr.value.endswith("_")
                and not func.attr.value.endswith("__")
            ):
                names.update(names_in(func.value))

    fast_visit(function.body, _InPlace())
    return names


def names_outside(function: cst.FunctionDef, node: cst.If) -> set[str]:
    """Names ``function`` mentions outside ``node``, and those its test reads."""
    names: set[str] = set()

    class _Outside(cst.CSTVisitor):
        def visit_If(self, inner: cst.If) -> bool:
            if inner is node:
                names.update(names_in(inner.test))
                return False
            return True

        def visit_Name(self, name: cst.Name) -> None:
            names.add(name.value)

    fast_visit(function.body, _Outside())
    return names


def assigned_outside(function: cst.FunctionDef, node: cst.If) -> set[str]:
    """Names the function binds outside ``node`` (so they have a value on the other side)."""
    names: set[str] = set()

    class _Targets(cst.CSTVisitor):
        def visit_If(self, inner: cst.If) -> bool:
            return inner is not node

        def visit_FunctionDef(self, inner: cst.FunctionDef) -> bool:
            return inner is function

        def visit_AssignTarget(self, target: cst.AssignTarget) -> None:
            names.update(names_in(target.target))

        def visit_AnnAssign(self, assign: cst.AnnAssign) -> None:
            names.update(names_in(assign.target))

        def visit_AugAssign(self, assign: cst.AugAssign) -> None:
            names.update(names_in(assign.target))

        def visit_For(self, loop: cst.For) -> None:
            names.update(names_in(loop.target))

    fast_visit(function, _Targets())
    return names
