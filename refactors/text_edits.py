"""Minimal text edits between two versions of a file, and applying them.

A fix is computed by rewriting the whole module with libcst; the editor should
only see the lines that changed, so that undo, cursors and unrelated text stay
where they were.  A line diff gives exactly that.
"""

from __future__ import annotations

import difflib

from .findings import TextEdit


def _line_start(lines: list[str], index: int) -> tuple[int, int]:
    """Position of the start of 0-based line ``index`` (or the end of the text)."""
    if index < len(lines) or not lines or lines[-1].endswith(("\n", "\r")):
        return index + 1, 0
    # The last line has no newline: "the start of the next line" does not exist.
    return len(lines), len(lines[-1])


def diff_edits(before: str, after: str) -> list[TextEdit]:
    """Edits that turn ``before`` into ``after``, one per changed block of lines."""
    old_lines = before.splitlines(keepends=True)
    new_lines = after.splitlines(keepends=True)
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    edits = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        start, end = _line_start(old_lines, i1), _line_start(old_lines, i2)
        edits.append(TextEdit(start[0], start[1], end[0], end[1], "".join(new_lines[j1:j2])))
    return edits


def _offset(lines: list[str], line: int, column: int) -> int:
    return sum(len(text) for text in lines[: line - 1]) + column


def apply_edits(source: str, edits: list[TextEdit]) -> str:
    """Apply non-overlapping edits given in coordinates of ``source``."""
    lines = source.splitlines(keepends=True)
    result = source
    # Apply from the end so earlier offsets stay valid.
    for edit in sorted(edits, key=lambda e: (e.line, e.column), reverse=True):
        start = _offset(lines, edit.line, edit.column)
        end = _offset(lines, edit.end_line, edit.end_column)
        result = result[:start] + edit.new_text + result[end:]
    return result
