"""Advice that fits the statement a runtime break sits in.

The runtime's hint belongs to the break's category (FG202 "Python reads a
tensor's data" has one hint for every read).  What to do depends on *why*
the program read the value: an ``assert`` wants a check that stays on the
device, an f-string wants shapes instead of values, an ``if`` wants
``torch.where``, arithmetic on ``.item()`` wants the tensor kept.  This
module finds that reason in the source at the break's position (with
:mod:`ast`; nothing is imported or run) and returns the advice for it, or
the category's hint when the statement is none of these.  ``fullgraph
check`` (text, JSON, SARIF) and the editor's hover both use it.
"""

from __future__ import annotations

import ast
import functools
import os
from pathlib import Path
from typing import Any

from fullgraph.lsp_server.positions import split_lines, utf8_offset_to_column

HINTS = {
    "assert": (
        "This `assert` reads the tensor's value in Python to decide whether to raise. "
        "Keep the check on the device with `torch._assert_async(cond, msg)` (the FG103 "
        "quick fix writes it), or validate the inputs once, outside the compiled function."
    ),
    "f-string": (
        "The f-string formats a tensor, which copies its data to Python "
        "(`Tensor.__format__`). Format what is known without the data (`{x.shape}`, "
        "`{x.dtype}`), or print the value after the forward pass (the FG102 quick fix "
        "defers the print)."
    ),
    "branch": (
        "This condition decides on a tensor's value in Python. Compute both results and "
        "select with `torch.where(cond, a, b)` (the FG101 quick fix does it where it is "
        "safe), or use `torch.cond(pred, true_fn, false_fn)` for larger branches."
    ),
    "item-arithmetic": (
        "`.item()` turns a tensor into a Python number only to compute with it. Drop "
        "`.item()` and keep the arithmetic on the 0-d tensor (`t.max() * 0.5 + 1` "
        "broadcasts like the number would), so the value stays in the graph."
    ),
}

_SCALAR_CALLS = {"item", "float", "int"}


def _span(node: ast.AST, lines: list[str]) -> tuple[tuple[int, int], tuple[int, int]]:
    def at(line: int, offset: int) -> tuple[int, int]:
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        return line, utf8_offset_to_column(text, offset)

    return at(node.lineno, node.col_offset), at(node.end_lineno, node.end_col_offset)


def _enclosing(tree: ast.AST, lines: list[str], point: tuple[int, int]) -> list[ast.AST]:
    """The nodes whose span holds ``point``, innermost first."""
    chain: list[ast.AST] = []
    node: ast.AST | None = tree
    while node is not None:
        chain.append(node)
        node = next(
            (
                child
                for child in ast.iter_child_nodes(node)
                if hasattr(child, "end_lineno")
                and _span(child, lines)[0] <= point < _span(child, lines)[1]
            ),
            None,
        )
    return chain[::-1]


def _is_scalar_read(node: ast.AST | None) -> bool:
    if not isinstance(node, ast.Call):
        return False
    function = node.func
    name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
    return name in _SCALAR_CALLS


def kind_at(source: str, line: int, column: int) -> str | None:
    """Why the code at (1-based ``line``, code-point ``column``) reads a value; None if unknown."""
    parsed = _parse(source)
    return _kind_in(*parsed, line, column) if parsed is not None else None


def _parse(source: str) -> tuple[ast.AST, list[str]] | None:
    try:
        return ast.parse(source), split_lines(source)
    except (SyntaxError, ValueError):
        return None


def _kind_in(tree: ast.AST, lines: list[str], line: int, column: int) -> str | None:
    chain = _enclosing(tree, lines, (line, column))
    for index, node in enumerate(chain):
        if isinstance(node, ast.JoinedStr):
            return "f-string"
        inner = chain[index - 1] if index else None
        if isinstance(node, ast.Assert) and inner is node.test:
            return "assert"
        if isinstance(node, (ast.If, ast.While, ast.IfExp)) and inner is node.test:
            return "branch"
        if isinstance(node, (ast.BinOp, ast.AugAssign)) and _is_scalar_read(inner):
            return "item-arithmetic"
        if isinstance(node, ast.stmt):
            break
    return None


@functools.lru_cache(maxsize=64)
def _parsed_file(path: str, mtime_ns: int) -> tuple[ast.AST, list[str]] | None:
    """The parsed file, once per version of it (a report has many breaks in few files)."""
    try:
        source = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return _parse(source)


@functools.lru_cache(maxsize=1024)
def _kind(path: str, mtime_ns: int, line: int, column: int) -> str | None:
    parsed = _parsed_file(path, mtime_ns)
    return _kind_in(*parsed, line, column) if parsed is not None else None


def hint_for(brk: dict[str, Any]) -> str:
    """The advice for one break of a report: by the kind of statement, else its category's."""
    default = str(brk.get("hint") or "")
    file = brk.get("file")
    if not file:
        return default
    try:
        mtime = os.stat(file).st_mtime_ns
    except OSError:
        return default
    kind = _kind(str(file), mtime, int(brk.get("line") or 0), int(brk.get("column") or 0))
    return HINTS.get(kind, default) if kind else default
