"""The one diagnostic model every front end shows: a finding at a place in a file.

Three things become a :class:`Diagnostic`:

- a static rule's finding (``FG1xx``), made by :meth:`Diagnostic.from_finding`
  from a refactors ``Finding`` (or a notebook cell's, with its cell);
- a runtime analysis's graph break (``FG2xx``), data check or deferred effect,
  made by :meth:`Diagnostic.from_break` from a report's break object
  (docs/report-schema.md);
- an analysis that failed (the user's program raised, crashed, timed out): a
  runtime diagnostic with no code, built by the language server.

The CLI's text, JSON and SARIF printers (:mod:`.cli`) and the language
server's LSP conversion (:mod:`.server.features.findings`) read the same
fields.  Positions keep the project convention: 1-based lines, 0-based
code-point columns; each front end converts once, where it prints.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from fullgraph.lsp_server.break_hints import hint_for
from fullgraph.lsp_server.break_sites import frame_names

# A file the static rules could not parse (docs/codes/FG001.md).
SYNTAX_ERROR_CODE = "FG001"


@dataclasses.dataclass(frozen=True)
class StackFrame:
    """One frame of the user call stack that reached a runtime break (outermost first)."""

    path: Path
    line: int
    column: int
    function: str
    qualname: str = ""  # with its class: "Block.forward" (break_sites.qualified_name)

    @property
    def name(self) -> str:
        return self.qualname or self.function

    def to_json(self) -> dict[str, Any]:
        return {
            "file": str(self.path),
            "line": self.line,
            "column": self.column,
            "function": self.function,
            "qualname": self.qualname,
        }


@dataclasses.dataclass(frozen=True)
class Diagnostic:
    """One finding: what (code, message, severity), where, and what to do about it."""

    code: str | None  # None for a failure of the analysis itself
    message: str
    line: int
    column: int
    end_line: int
    end_column: int
    severity: str  # "error" | "warning" | "information" | "hint"
    origin: str = "static"  # "static" | "runtime"
    # The file; None for a static finding of the document the server is linting.
    path: Path | None = None
    # A notebook's cell (1-based, counting every cell); ``line`` is then the cell's line.
    cell: int | None = None
    fix: Any = None  # refactors.Fix (or notebooks.CellFix) in the same coordinates, or None
    # Runtime: the hint that fits the statement; static: why there is no automatic fix.
    hint: str = ""
    rule_name: str | None = None  # the static rule's NAME
    category: str | None = None  # the runtime break category's name
    doc_path: str = ""  # docs/rules/FG1xx.md or docs/codes/FG2xx.md
    stack: tuple[StackFrame, ...] = ()
    entry: str = ""  # the entrypoint whose analysis found it (runtime)
    entries: list[str] = dataclasses.field(default_factory=list)  # every entrypoint reaching it
    hover: str = ""  # Markdown the editor shows on hover (runtime; prepared on arrival)

    @property
    def fixable(self) -> bool:
        return self.fix is not None

    @property
    def site(self) -> tuple:
        """What makes two findings one diagnostic: the same code at the same place."""
        return (self.code, self.path, self.line, self.column)

    @classmethod
    def from_finding(
        cls,
        finding: Any,
        *,
        path: Path | None = None,
        cell: int | None = None,
        rules: dict[str, Any] | None = None,
    ) -> Diagnostic:
        """A refactors ``Finding`` (``rules``: the refactors' RULES, for the rule's name)."""
        rule = (rules or {}).get(finding.code)
        return cls(
            code=finding.code,
            message=finding.message,
            line=finding.line,
            column=finding.column,
            end_line=finding.end_line,
            end_column=finding.end_column,
            severity=getattr(finding, "severity", "warning"),
            origin="static",
            path=path,
            cell=cell,
            fix=getattr(finding, "fix", None),
            hint=getattr(finding, "refusal_reason", None) or "",
            rule_name=getattr(rule, "NAME", None),
            doc_path=getattr(finding, "doc_path", f"docs/rules/{finding.code}.md"),
        )

    @classmethod
    def from_break(
        cls, brk: dict[str, Any], severity: str = "warning", *, root: Path | None = None
    ) -> Diagnostic:
        """A report's break (or data check, or deferred effect) as the report gives it.

        With ``root``, relative file names are taken under it and every path is
        resolved (the editor compares them with its documents' paths).
        """
        stack = brk.get("stack") or []
        line = brk["line"]
        column = brk["column"]
        return cls(
            code=brk["code"],
            message=brk["message"],
            line=line,
            column=column,
            end_line=brk.get("end_line", line),
            end_column=brk.get("end_column", column),
            severity=severity,
            origin="runtime",
            path=_path(str(brk["file"]), root),
            category=brk.get("category"),
            hint=hint_for(brk),
            doc_path=f"docs/codes/{brk['code']}.md",
            stack=tuple(
                StackFrame(
                    path=_path(str(frame.get("file", "")), root),
                    line=int(frame.get("line") or 1),
                    column=int(frame.get("column") or 0),
                    function=str(frame.get("function", "?")),
                    qualname=name,  # Block.forward, where the report says forward
                )
                for frame, name in zip(stack, frame_names(stack))
            ),
        )

    def to_json(self) -> dict[str, Any]:
        """The diagnostic in ``fullgraph check --json`` (docs/cli.md)."""
        return {
            "path": str(self.path),
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "code": self.code,
            "message": self.message,
            "severity": self.severity,
            "origin": self.origin,
            "fixable": self.fixable,
            "category": self.category,
            "hint": self.hint,
            "doc_path": self.doc_path,
            "stack": [frame.to_json() for frame in self.stack],
            "entries": list(self.entries),
            "cell": self.cell,
        }


def _path(file: str, root: Path | None) -> Path:
    if root is None:
        return Path(file)
    path = Path(file)
    return (path if path.is_absolute() else root / path).resolve()
