"""Putting a plan's statements where the ``if`` they replace was, with its comments.

The new statements take the ``if``'s leading lines; comments inside the ``if``
that the new statements do not carry themselves (the ``torch.cond`` form keeps
each branch's statements, and so their comments) move above them.  With a
static first conjunct (``if self.training and x.sum() > 0``) the ``if`` stays,
testing only the static part, and the new statements become its body.
A decorator added to a function (FG102, FG106) goes below the comments above it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import libcst as cst

from ..fast_tree import fast_visit


def comments_in(node: cst.CSTNode) -> list[cst.EmptyLine]:
    """Every comment inside ``node``, as standalone comment lines."""
    found: list[cst.EmptyLine] = []

    class _Comments(cst.CSTVisitor):
        def visit_Comment(self, comment: cst.Comment) -> None:
            found.append(cst.EmptyLine(comment=comment))

    fast_visit(node, _Comments())
    return found


def statement_comments(block: cst.BaseSuite) -> list[cst.EmptyLine]:
    """Comments of a block's statements (an indented block's header and footer stay with it)."""
    if isinstance(block, cst.SimpleStatementSuite):
        return comments_in(block)
    return [line for statement in block.body for line in comments_in(statement)]


def put_in_place(
    node: cst.If,
    statements: list[cst.BaseStatement],
    static: Sequence[cst.BaseExpression],
    kept: Collection[int],
    block: cst.CSTNode | None,
) -> cst.CSTNode | cst.FlattenSentinel:
    """The replacement of ``node``: ``statements``, or ``if <static>:`` around them.

    ``kept`` holds the ids of the comments the statements carry already;
    ``block`` is the node's parent (a nested function after other statements
    gets a blank line above it).
    """
    # Comments the new statements do not carry move above them.
    moved = [
        line
        for line in comments_in(node.with_changes(leading_lines=()))
        if id(line.comment) not in kept
    ]
    if static:
        # The Python test keeps the static part; comments from the rewritten
        # branches go above the new statements, inside it.
        test = static[0]
        for part in static[1:]:
            test = cst.BooleanOperation(test, cst.And(), part)
        body = node.body
        inner = [line for line in statement_comments(body) if id(line.comment) not in kept]
        statements[0] = statements[0].with_changes(
            leading_lines=[*inner, *statements[0].leading_lines]
        )
        new_block = (
            cst.IndentedBlock(body=statements)
            if isinstance(body, cst.SimpleStatementSuite)
            else body.with_changes(body=statements)
        )
        return node.with_changes(test=test, body=new_block)
    leading = [*node.leading_lines, *moved]
    if (
        isinstance(statements[0], cst.FunctionDef)
        and isinstance(block, cst.IndentedBlock)
        and block.body[0] is not node
        and not (node.leading_lines and node.leading_lines[0].comment is None)
    ):
        # A nested function after other statements gets a blank line above it.
        leading.insert(0, cst.EmptyLine(indent=False))
    first = statements[0]
    statements[0] = first.with_changes(leading_lines=[*leading, *first.leading_lines])
    return cst.FlattenSentinel(statements)


def with_decorators(function: cst.FunctionDef, decorators: list[cst.Decorator]) -> cst.FunctionDef:
    """``function`` with ``decorators``; comments above a bare ``def`` stay above them."""
    if function.decorators or not function.leading_lines:
        return function.with_changes(decorators=decorators)
    # Comments above a bare ``def`` stay above the new decorator.
    return function.with_changes(
        decorators=[
            decorators[0].with_changes(leading_lines=function.leading_lines),
            *decorators[1:],
        ],
        leading_lines=(),
    )
