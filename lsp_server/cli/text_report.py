"""Readable text for the terminal: check lines, summaries and ``explain`` reports.

Check lines follow ruff: ``path:line:col: CODE message`` with a 1-based column
(the report's columns are 0-based), paths relative to the working directory
when they lie under it, and ``[*]`` after a finding that ``fullgraph fix`` can
rewrite; indented lines under it give a runtime break's caller chain and hint,
or the reason a static finding has no automatic fix.  ``format_report`` prints one report (docs/report-schema.md) section
by section: breaks with their call stacks, graphs, guards, mocks, side effects.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from fullgraph.lsp_server.analysis.service import AnalysisResult
from fullgraph.lsp_server.break_hints import hint_for
from fullgraph.lsp_server.break_sites import caller_chain, frame_names
from fullgraph.lsp_server.cli.check_run import CheckRun
from fullgraph.lsp_server.diagnostic import SYNTAX_ERROR_CODE, Diagnostic

INDENT = "    "


def display_path(path: str | Path, cwd: Path | None = None) -> str:
    cwd = (cwd or Path.cwd()).resolve()
    path = Path(path)
    try:
        return str(path.resolve().relative_to(cwd))
    except (ValueError, OSError):
        return str(path)


def location(path: str | Path, line: int, column: int, cell: int | None, cwd: Path | None) -> str:
    """``path:line:col``; in a notebook ``path:cell N:line:col`` (the line within cell N)."""
    in_cell = f"cell {cell}:" if cell is not None else ""
    return f"{display_path(path, cwd)}:{in_cell}{line}:{column + 1}"


def diagnostic_line(diagnostic: Diagnostic, cwd: Path | None = None) -> str:
    where = location(diagnostic.path, diagnostic.line, diagnostic.column, diagnostic.cell, cwd)
    fixable = " [*]" if diagnostic.fixable else ""
    return f"{where}: {diagnostic.code}{fixable} {diagnostic.message}"


def diagnostic_lines(diagnostic: Diagnostic, cwd: Path | None = None) -> list[str]:
    """The ruff-style line, then indented: the caller chain and entrypoints of a
    runtime break, its hint, or why a static finding has no automatic fix."""
    lines = [diagnostic_line(diagnostic, cwd)]
    if diagnostic.origin == "runtime":
        if diagnostic.stack:
            chain = caller_chain(frame.name for frame in diagnostic.stack)
            lines.append(f"{INDENT}reached as {chain} from {', '.join(diagnostic.entries)}")
        if diagnostic.hint:
            lines.append(f"{INDENT}hint: {diagnostic.hint}")
    elif diagnostic.hint and not diagnostic.fixable:
        lines.append(f"{INDENT}no automatic fix: {diagnostic.hint}")
    return lines


def syntax_error_line(path: str | Path, error: Exception, cwd: Path | None = None) -> str:
    """``path:line:col: FG001 SyntaxError: message`` for a file the rules could not parse."""
    line, column = getattr(error, "line", 1) or 1, getattr(error, "column", 0) or 0
    message = getattr(error, "message", str(error))
    where = location(path, line, column, getattr(error, "cell", None), cwd)
    return f"{where}: {SYNTAX_ERROR_CODE} SyntaxError: {message}"


def result_line(result: AnalysisResult) -> str:
    """One line per entrypoint: graphs and breaks, or why there is no report."""
    if result.report is not None and result.status == "ok":
        graphs = result.report.get("graph_count", 0)
        breaks = result.report.get("break_count", 0)
        return (
            f"{result.entry}: {graphs} graph{'s' * (graphs != 1)}, "
            f"{breaks} break{'s' * (breaks != 1)} ({result.duration_s:.1f} s)"
        )
    error = result.error or {}
    message = error.get("message", "").strip().splitlines()
    return f"{result.entry}: {result.status}: {message[0] if message else error.get('type', '')}"


def _counts(counter: dict[str, int]) -> str:
    return ", ".join(f"{name}: {count}" for name, count in sorted(counter.items()))


def summary_line(run: CheckRun) -> str:
    s = run.summary()
    parts = []
    if s["breaks"]:
        parts.append(
            f"{s['breaks']} graph break{'s' * (s['breaks'] != 1)} "
            f"({_counts(s['breaks_by_category'])})"
        )
    if s["findings"]:
        fixable = f", {s['fixable']} fixable with `fullgraph fix`" if s["fixable"] else ""
        parts.append(
            f"{s['findings']} static finding{'s' * (s['findings'] != 1)} "
            f"({_counts(s['findings_by_code'])}{fixable})"
        )
    if s["syntax_errors"]:
        count = s["syntax_errors"]
        parts.append(
            f"{count} file{'s' * (count != 1)} with a syntax error "
            f"({SYNTAX_ERROR_CODE}: not checked)"
        )
    found = "Found " + " and ".join(parts) if parts else "No graph breaks found"
    entrypoints = (
        f"; {s['entrypoints']} entrypoint{'s' * (s['entrypoints'] != 1)}, "
        f"{s['graphs']} graph{'s' * (s['graphs'] != 1)}"
    )
    failed = f", {s['failed']} failed" if s["failed"] else ""
    config = f", {s['config_errors']} misconfigured" if s["config_errors"] else ""
    files = f"; {s['files_checked']} file{'s' * (s['files_checked'] != 1)} checked"
    if run.static_skipped:
        files = ""
    elif not run.static_available:
        files = "; static rules unavailable (fullgraph.refactors not installed)"
    return f"{found}{entrypoints}{failed}{config}{files}."


def _section(title: str) -> list[str]:
    return ["", title, "-" * len(title)]


def _block(text: str, indent: str = INDENT) -> list[str]:
    return textwrap.indent(text.rstrip("\n"), indent).splitlines() or [indent]


def format_report(report: dict[str, Any], cwd: Path | None = None) -> str:
    """The whole report as text, for ``fullgraph explain``."""
    function = report.get("function", {})
    where = f"{display_path(function.get('file', '?'), cwd)}:{function.get('line', '?')}"
    lines = [
        f"{function.get('qualname', '?')} ({where})",
        (
            f"status: {report.get('status')}   graphs: {report.get('graph_count', 0)}   "
            f"breaks: {report.get('break_count', 0)}"
        ),
    ]
    error = report.get("error")
    if error:
        lines += _section("Error")
        lines += _block(error.get("traceback") or f"{error.get('type')}: {error.get('message')}")

    lines += _section(f"Breaks ({len(report.get('breaks', []))})")
    for number, brk in enumerate(report.get("breaks", []), 1):
        location = f"{display_path(brk['file'], cwd)}:{brk['line']}:{brk['column'] + 1}"
        lines.append(f"{number}. {location}: {brk['code']} [{brk['category']}] {brk['message']}")
        lines += _block(textwrap.fill(brk.get("explanation", ""), 88), INDENT)
        lines.append(f"{INDENT}hint: {hint_for(brk)}")
        if brk.get("stack"):
            lines.append(f"{INDENT}call stack (outermost first):")
            for frame, name in zip(brk["stack"], frame_names(brk["stack"])):
                lines.append(
                    f"{INDENT * 2}{display_path(frame['file'], cwd)}:{frame['line']} in {name}"
                )
    if not report.get("breaks"):
        lines.append("none: the whole call is one graph per record")
    for key, title in (
        ("data_checks", "Data checks in front of the graph"),
        ("deferred_effects", "Effects made after the graph"),
    ):
        sites = report.get(key, [])
        if sites:
            lines += _section(f"{title} ({len(sites)})")
        for number, site in enumerate(sites, 1):
            location = f"{display_path(site['file'], cwd)}:{site['line']}:{site['column'] + 1}"
            lines.append(f"{number}. {location}: {site['code']} {site['message']}")
            lines += _block(textwrap.fill(site.get("explanation", ""), 88), INDENT)

    for graph in report.get("graphs", []):
        counts = ", ".join(f"{op} x{n}" for op, n in sorted(graph.get("op_counts", {}).items()))
        lines += _section(f"Graph {graph['index']} ({graph.get('op_count', 0)} ops)")
        lines.append(f"inputs: {', '.join(graph.get('inputs', [])) or '-'}")
        lines.append(f"outputs: {', '.join(graph.get('outputs', [])) or '-'}")
        if counts:
            lines.append(f"ops: {counts}")
        lines += _block(graph.get("code", ""))

    for guard in report.get("guards", []):
        lines += _section(
            f"Guard of record {guard['record']} ({guard.get('check_count', 0)} checks)"
        )
        lines += _block(guard.get("source", ""))
    for mock in report.get("mocks", []):
        lines += _section(f"Mock of record {mock['record']}")
        lines += _block(mock.get("source", ""))
    notes = report.get("notes", [])
    if notes:
        lines += _section("Notes")
        lines += [f"- {note}" for note in notes]
    effects = report.get("side_effects", [])
    if effects:
        lines += _section(f"Side effects ({len(effects)})")
        for effect in effects:
            lines.append(f"- {effect['kind']} {effect['target']}: {effect['description']}")
    return "\n".join(lines) + "\n"


def format_output_tail(result: AnalysisResult, max_lines: int = 20) -> str:
    """The end of what the user's program printed, for context under a report."""
    parts = []
    for name, text in (("stdout", result.stdout), ("stderr", result.stderr)):
        if text.strip():
            tail = text.rstrip("\n").splitlines()[-max_lines:]
            parts += _section(f"Program {name} (last {len(tail)} lines)") + tail
    return "\n".join(parts) + ("\n" if parts else "")
