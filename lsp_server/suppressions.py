"""The "disable FGxxx for this line" edit: a suppression comment the static rules read.

The comment syntax is the one ``fullgraph.refactors.suppression`` understands
(``# fullgraph: ignore[FG101]`` on the line where a finding starts).  A line
that already has such a comment with a list gets the code added to its list;
any other line gets the comment appended after its code (and after any
comment it has: the rules search the whole comment).  Where a comment cannot
go, no edit is offered: a line that ends inside a multi-line string (the
comment would become string text) or with a backslash continuation (a
comment there is a syntax error).
"""

from __future__ import annotations

import dataclasses
import io
import re
import tokenize

from fullgraph.lsp_server.positions import split_lines

_WITH_CODES = re.compile(r"#\s*fullgraph:\s*ignore\[(?P<codes>[A-Za-z0-9_,\s]*)\]")


@dataclasses.dataclass(frozen=True)
class LineEdit:
    """Replace ``line`` (1-based) from ``column`` to its end with ``new_text``."""

    line: int
    column: int
    end_line: int
    end_column: int
    new_text: str


def _ends_inside_string(text: str, line: int) -> bool:
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return True  # cannot tell: do not risk it
    string_types = {tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", -1)}
    return any(
        token.type in string_types and token.start[0] <= line < token.end[0] for token in tokens
    )


def suppression_edit(text: str, line: int, code: str) -> LineEdit | None:
    """The edit that silences ``code`` on ``line`` (1-based) of ``text``, or None."""
    lines = split_lines(text)
    if not 1 <= line <= len(lines):
        return None
    current = lines[line - 1]
    existing = _WITH_CODES.search(current)
    if existing:
        codes = [part.strip() for part in existing.group("codes").split(",") if part.strip()]
        if code in codes:
            return None
        start = existing.start()
        return LineEdit(
            line, start, line, len(current), f"# fullgraph: ignore[{', '.join([*codes, code])}]"
        )
    if current.rstrip().endswith("\\") or _ends_inside_string(text, line):
        return None
    stripped = current.rstrip()
    return LineEdit(line, len(stripped), line, len(current), f"  # fullgraph: ignore[{code}]")
