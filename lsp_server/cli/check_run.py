"""One ``fullgraph check`` run: static findings plus entrypoint analyses, as data.

The text, JSON and SARIF printers all read a :class:`CheckRun`, so they agree
on what was found.  Static findings (``FG1xx``) and runtime breaks (``FG2xx``)
become one list of :class:`Diagnostic` values; a runtime break reached from
several entrypoints is one diagnostic (breaks are counted by distinct source
location, :mod:`.break_sites`, as in the editor), with the hint that fits its
statement (:mod:`.break_hints`).  Positions keep the project convention: 1-based lines, 0-based
code-point columns; printers convert.
"""

from __future__ import annotations

import collections
import dataclasses
import sys
from pathlib import Path
from typing import Any

from fullgraph.lsp_server.break_hints import hint_for
from fullgraph.lsp_server.break_sites import break_key, by_site, frame_names
from fullgraph.lsp_server.service import AnalysisResult

SCHEMA_VERSION = 1
# Exit codes, as documented in docs/cli.md.
EXIT_CLEAN = 0
EXIT_PROBLEMS = 1
EXIT_CONFIG = 2
FAILED_STATUSES = ("user_exception", "timeout", "crashed", "cancelled")
# Most severe first.  By default a check shows (and fails on) warnings and errors;
# "information" and "hint" findings (e.g. hybridization candidates) are advice.
SEVERITIES = ("error", "warning", "information", "hint")
# A file the static rules could not parse (docs/codes/FG001.md).
SYNTAX_ERROR_CODE = "FG001"


@dataclasses.dataclass
class Diagnostic:
    path: Path
    line: int
    column: int
    end_line: int
    end_column: int
    code: str
    message: str
    severity: str  # "error" | "warning" | "information" | "hint"
    origin: str  # "static" | "runtime"
    fixable: bool = False
    category: str | None = None  # runtime break category name
    hint: str = ""
    doc_path: str = ""
    stack: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    entries: list[str] = dataclasses.field(default_factory=list)  # entrypoints reaching it
    # A notebook's cell (1-based, counting every cell); ``line`` is then the cell's line.
    cell: int | None = None

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["path"] = str(self.path)
        return data


def tool_version() -> str:
    try:
        from importlib.metadata import version

        return version("fullgraph")
    except Exception:  # noqa: BLE001 - an uninstalled checkout still reports
        return "0.0.0+unknown"


@dataclasses.dataclass
class CheckRun:
    root: Path
    findings: dict[Path, list[Any]] = dataclasses.field(default_factory=dict)
    syntax_errors: dict[Path, Exception] = dataclasses.field(default_factory=dict)
    results: list[AnalysisResult] = dataclasses.field(default_factory=list)
    static_available: bool = True
    static_skipped: bool = False
    min_severity: str = "warning"  # the least severe level shown and counted
    ignore: tuple[str, ...] = ()  # codes hidden ([tool.fullgraph] ignore)

    def diagnostics(self) -> list[Diagnostic]:
        shown = SEVERITIES[: SEVERITIES.index(self.min_severity) + 1]
        diagnostics = [
            self._from_finding(path, finding)
            for path, findings in self.findings.items()
            for finding in findings
            if getattr(finding, "finding", finding).severity in shown
            and getattr(finding, "finding", finding).code not in self.ignore
        ]
        found = []
        for result in self.results:
            report = result.report or {}
            # Data checks and deferred effects don't split the graph: information.
            sites = [(brk, "warning") for brk in report.get("breaks", [])]
            sites += [(check, "information") for check in report.get("data_checks", [])]
            sites += [(effect, "information") for effect in report.get("deferred_effects", [])]
            found += [
                (result.entry, (brk, severity))
                for brk, severity in sites
                if (severity != "information" or severity in shown)
                and brk["code"] not in self.ignore
            ]
        breaks = []
        for (brk, severity), entries in by_site(found, key=lambda item: break_key(item[0])):
            diagnostic = self._from_break(brk, severity)
            diagnostic.entries = entries
            breaks.append(diagnostic)
        diagnostics.extend(breaks)
        diagnostics.sort(key=lambda d: (str(d.path), d.cell or 0, d.line, d.column, d.code))
        return diagnostics

    @staticmethod
    def _from_finding(path: Path, finding: Any) -> Diagnostic:
        cell = None
        if hasattr(finding, "cell") and hasattr(finding, "finding"):  # notebooks.CellFinding
            cell, finding = finding.cell + 1, finding.finding
        return Diagnostic(
            cell=cell,
            path=path.resolve(),  # runtime breaks carry absolute paths; sort them together
            line=finding.line,
            column=finding.column,
            end_line=finding.end_line,
            end_column=finding.end_column,
            code=finding.code,
            message=finding.message,
            severity=finding.severity,
            origin="static",
            fixable=finding.fix is not None,
            hint=finding.refusal_reason or "",
            doc_path=getattr(finding, "doc_path", f"docs/rules/{finding.code}.md"),
        )

    @staticmethod
    def _from_break(brk: dict[str, Any], severity: str = "warning") -> Diagnostic:
        stack = [dict(frame) for frame in brk.get("stack", [])]
        for frame, name in zip(stack, frame_names(stack)):
            frame["qualname"] = name  # Block.forward, where the report says forward
        return Diagnostic(
            path=Path(brk["file"]),
            line=brk["line"],
            column=brk["column"],
            end_line=brk.get("end_line", brk["line"]),
            end_column=brk.get("end_column", brk["column"]),
            code=brk["code"],
            message=brk["message"],
            severity=severity,
            origin="runtime",
            category=brk.get("category"),
            hint=hint_for(brk),
            doc_path=f"docs/codes/{brk['code']}.md",
            stack=stack,
        )

    def failed(self) -> list[AnalysisResult]:
        return [r for r in self.results if r.status in FAILED_STATUSES]

    def config_errors(self) -> list[AnalysisResult]:
        return [r for r in self.results if r.status == "config_error"]

    def summary(self) -> dict[str, Any]:
        diagnostics = self.diagnostics()
        breaks = [d for d in diagnostics if d.origin == "runtime" and d.severity != "information"]
        static = [d for d in diagnostics if d.origin == "static"]
        return {
            "entrypoints": len(self.results),
            "analyzed": sum(1 for r in self.results if r.report is not None),
            "failed": len(self.failed()),
            "config_errors": len(self.config_errors()),
            "graphs": sum((r.report or {}).get("graph_count", 0) for r in self.results),
            "breaks": len(breaks),
            "breaks_by_category": dict(collections.Counter(d.category or d.code for d in breaks)),
            "findings": len(static),
            "findings_by_code": dict(collections.Counter(d.code for d in static)),
            "fixable": sum(1 for d in static if d.fixable),
            "files_checked": len(self.findings),
            "syntax_errors": len(self.syntax_errors),
        }

    def exit_code(self) -> int:
        if self.config_errors():
            return EXIT_CONFIG
        if self.diagnostics() or self.failed() or self.syntax_errors:
            return EXIT_PROBLEMS
        return EXIT_CLEAN

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "tool": {
                "name": "fullgraph",
                "version": tool_version(),
                "python": sys.version.split()[0],
            },
            "root": str(self.root),
            "summary": self.summary(),
            "diagnostics": [d.to_json() for d in self.diagnostics()],
            "syntax_errors": [
                {
                    "path": str(path),
                    "line": getattr(exc, "line", 1),
                    "column": getattr(exc, "column", 0),
                    "message": getattr(exc, "message", str(exc)),
                    "cell": getattr(exc, "cell", None),
                }
                for path, exc in sorted(self.syntax_errors.items())
            ],
            "entrypoints": [result.to_json() for result in self.results],
        }
