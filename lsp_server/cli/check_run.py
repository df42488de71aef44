"""One ``fullgraph check`` run: static findings plus entrypoint analyses, as data.

The text, JSON and SARIF printers all read a :class:`CheckRun`, so they agree
on what was found.  Static findings (``FG1xx``) and runtime breaks (``FG2xx``)
become one list of :class:`~fullgraph.lsp_server.diagnostic.Diagnostic`
values; a runtime break reached from several entrypoints is one diagnostic
(breaks are counted by distinct source location,
:mod:`fullgraph.lsp_server.break_sites`, as in the editor), with the hint that
fits its statement (:mod:`fullgraph.lsp_server.break_hints`).  Positions keep
the project convention: 1-based lines, 0-based code-point columns; printers
convert.
"""

from __future__ import annotations

import collections
import dataclasses
import sys
from pathlib import Path
from typing import Any

from fullgraph.lsp_server.analysis.service import AnalysisResult
from fullgraph.lsp_server.break_sites import break_key, by_site
from fullgraph.lsp_server.diagnostic import Diagnostic

SCHEMA_VERSION = 1
# Exit codes, as documented in docs/cli.md.
EXIT_CLEAN = 0
EXIT_PROBLEMS = 1
EXIT_CONFIG = 2
FAILED_STATUSES = ("user_exception", "timeout", "crashed", "cancelled")
# Most severe first.  By default a check shows (and fails on) warnings and errors;
# "information" and "hint" findings (e.g. hybridization candidates) are advice.
SEVERITIES = ("error", "warning", "information", "hint")


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
            breaks.append(
                dataclasses.replace(Diagnostic.from_break(brk, severity), entries=entries)
            )
        diagnostics.extend(breaks)
        diagnostics.sort(key=lambda d: (str(d.path), d.cell or 0, d.line, d.column, d.code))
        return diagnostics

    @staticmethod
    def _from_finding(path: Path, finding: Any) -> Diagnostic:
        cell = None
        if hasattr(finding, "cell") and hasattr(finding, "finding"):  # notebooks.CellFinding
            cell, finding = finding.cell + 1, finding.finding
        # Runtime breaks carry absolute paths; sort them together.
        return Diagnostic.from_finding(finding, path=path.resolve(), cell=cell)

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
