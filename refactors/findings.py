"""The values the refactors API hands to its callers: findings, fixes and text edits.

Every position uses one convention, the one libcst's ``PositionProvider`` and the
runtime report share: lines are 1-based, columns are 0-based code points.  The
language server converts to LSP positions in its own single helper.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Literal

Severity = Literal["error", "warning", "information", "hint"]


class SourceSyntaxError(Exception):
    """The source could not be parsed, so no rule ran on it."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(f"{message} (line {line}, column {column})")
        self.message = message
        self.line = line
        self.column = column


@dataclasses.dataclass(frozen=True)
class TextEdit:
    """Replace the text between two positions (end exclusive) with ``new_text``."""

    line: int
    column: int
    end_line: int
    end_column: int
    new_text: str


class Fix:
    """A safe rewrite: the edits are minimal and apply to the linted source as-is.

    Building the edits rewrites, regenerates and re-parses the whole module, and
    most findings are never fixed, so a fix built from a rule's changes computes
    its edits the first time they are read (an editor asking for the quick fix,
    ``fix_source`` applying it).  A rewrite that cannot be built has no edits.
    """

    def __init__(
        self,
        title: str,
        edits: list[TextEdit] | None = None,
        build: Callable[[], list[TextEdit]] | None = None,
        *,
        changes: dict | None = None,
        imports: tuple[str, ...] = (),
    ) -> None:
        if (edits is None) == (build is None):
            raise ValueError("give the edits or a function that builds them")
        self.title = title
        self._edits = edits
        self._build = build
        # The rule's node replacements and imports, which ``fix_source`` merges with the
        # other fixes of a round into one rewrite (None for a fix given as edits).
        self.changes = changes
        self.imports = imports

    @property
    def edits(self) -> list[TextEdit]:
        if self._edits is None:
            self._edits = self._build()
            self._build = None
        return self._edits

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Fix) and (self.title, self.edits) == (other.title, other.edits)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Fix({self.title!r}, {self.edits!r})"


@dataclasses.dataclass(frozen=True)
class Finding:
    """One diagnostic of one rule at one source range."""

    code: str
    message: str
    line: int
    column: int
    end_line: int
    end_column: int
    severity: Severity
    fix: Fix | None = None
    # Why no fix is offered, when the rule knows a rewrite but could not prove it safe.
    refusal_reason: str | None = None

    @property
    def doc_path(self) -> str:
        return f"docs/rules/{self.code}.md"
