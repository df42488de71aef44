"""Inline suppression comments: ``# fullgraph: ignore`` and ``# fullgraph: ignore[FG101,FG102]``.

A comment suppresses findings that start on its line.  Comments are found with
:mod:`tokenize`, so the text of a string that looks like a comment never counts.
"""

from __future__ import annotations

import io
import re
import tokenize

_PATTERN = re.compile(r"#\s*fullgraph:\s*ignore(?:\[(?P<codes>[A-Za-z0-9_,\s]*)\])?")

# A line -> the codes suppressed there; ``None`` means every code.
Suppressions = dict[int, "frozenset[str] | None"]


def find_suppressions(source: str) -> Suppressions:
    found: Suppressions = {}
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return found
    for token in tokens:
        if token.type != tokenize.COMMENT:
            continue
        match = _PATTERN.search(token.string)
        if not match:
            continue
        codes = match.group("codes")
        line = token.start[0]
        if codes is None:
            found[line] = None
        elif found.get(line, frozenset()) is not None:
            names = {code.strip().upper() for code in codes.split(",") if code.strip()}
            found[line] = frozenset(found.get(line) or ()) | names
    return found


def is_suppressed(suppressions: Suppressions, line: int, code: str) -> bool:
    if line not in suppressions:
        return False
    codes = suppressions[line]
    return codes is None or code in codes
