"""Runtime analysis results as findings: graph breaks and failed analyses.

Pure functions over the service's :class:`AnalysisResult` (its ``report`` is
the JSON schema of docs/report-schema.md).  A graph break becomes one runtime
:class:`~fullgraph.lsp_server.diagnostic.Diagnostic` at the break's source
range, carrying the user call stack and a Markdown hover: reason, hint, stack,
the entrypoint's graph count and the guard a later call would check.  An analysis that did not
finish (the user's program raised, crashed, timed out, or the entrypoint is
misconfigured) becomes exactly one finding — at the user's frame that raised
when the traceback names one in the workspace, else at the entrypoint's
``def`` — plus the notification the server sends.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from pathlib import Path
from typing import Any

from fullgraph.lsp_server.analysis.service import AnalysisResult
from fullgraph.lsp_server.break_hints import hint_for
from fullgraph.lsp_server.break_sites import caller_chain, frame_names
from fullgraph.lsp_server.diagnostic import Diagnostic
from fullgraph.lsp_server.locations import entry_definition
from fullgraph.lsp_server.server.state import FAILURE_TITLES, EntryResult

# Guards can be long; a hover shows their head and says how much is left out.
GUARD_PREVIEW_LINES = 25

_TRACEBACK_FRAME = re.compile(
    r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>.+)$'
)


def _path(file: str, root: Path) -> Path:
    path = Path(file)
    return (path if path.is_absolute() else root / path).resolve()


def _guard_preview(report: dict[str, Any]) -> str | None:
    guards = report.get("guards") or []
    if not guards:
        return None
    lines = str(guards[0].get("source", "")).splitlines()
    if len(lines) > GUARD_PREVIEW_LINES:
        hidden = len(lines) - GUARD_PREVIEW_LINES
        lines = lines[:GUARD_PREVIEW_LINES] + [f"# … {hidden} more line(s)"]
    return "\n".join(lines)


def break_hover(entry: str, report: dict[str, Any], brk: dict[str, Any], root: Path) -> str:
    """Markdown for hovering a graph break."""
    parts = [f"**{brk.get('code', '')} {brk.get('category', '')}** — {brk.get('message', '')}"]
    if brk.get("explanation"):
        parts.append(str(brk["explanation"]))
    hint = hint_for(brk)
    if hint:
        parts.append(f"**Hint:** {hint}")
    stack = brk.get("stack") or []
    if stack:
        names = frame_names(stack)
        frames = [f"Reached as {caller_chain(names)}:\n"]
        for index, (frame, name) in enumerate(zip(stack, names), start=1):
            location = _path(str(frame.get("file", "")), root)
            try:
                shown = location.relative_to(root.resolve())
            except ValueError:
                shown = location
            frames.append(f"{index}. `{name}` — {shown}:{frame.get('line', '?')}")
        parts.append("**Call stack**\n\n" + "\n".join(frames))
    parts.append(
        f"**Entrypoint** `{entry}`: {report.get('graph_count', 0)} graph(s), "
        f"{report.get('break_count', 0)} break(s)"
    )
    guard = _guard_preview(report)
    if guard:
        parts.append(f"**Guard checked before reusing the record**\n\n```python\n{guard}\n```")
    return "\n\n".join(parts)


def break_findings(
    entry: str, report: dict[str, Any], root: Path, severity: str
) -> list[Diagnostic]:
    findings = []
    # Breaks split the graph; data checks and deferred effects do not (information,
    # as in `fullgraph check`), but their advice is the same.
    sites = [(brk, severity, "graph break") for brk in report.get("breaks") or []]
    sites += [(site, "information", "no split") for site in report.get("data_checks") or []]
    sites += [(site, "information", "no split") for site in report.get("deferred_effects") or []]
    for brk, site_severity, title in sites:
        if not brk.get("file"):
            continue
        found = Diagnostic.from_break(brk, site_severity, root=root)
        findings.append(
            dataclasses.replace(
                found,
                message=f"{title}: {found.message}" if title == "graph break" else found.message,
                # An empty range is invisible in an editor: at least one character.
                end_column=found.end_column or found.column + 1,
                entry=entry,
                hover=break_hover(entry, report, brk, root),
            )
        )
    return findings


def _raising_frame(error: dict[str, Any] | None, root: Path) -> tuple[Path, int] | None:
    """The innermost traceback frame that lies in the workspace."""
    resolved_root = root.resolve()
    found = None
    for line in str((error or {}).get("traceback", "")).splitlines():
        match = _TRACEBACK_FRAME.match(line)
        if not match:
            continue
        path = _path(match["file"], root)
        if path.is_relative_to(resolved_root) and "site-packages" not in path.parts:
            found = (path, int(match["line"]))
    return found


def failure_finding(
    entry: str, status: str, error: dict[str, Any] | None, root: Path
) -> Diagnostic | None:
    """The one finding for an analysis that did not produce a report."""
    error = error or {}
    title = FAILURE_TITLES.get(status, status)
    detail = error.get("message") or ""
    kind = error.get("type")
    message = f"fullgraph: entrypoint {entry} {title}" + (
        f": {kind}: {detail}" if kind else f": {detail}" if detail else ""
    )
    hover = f"**{message}**"
    if error.get("traceback"):
        hover += f"\n\n```\n{str(error['traceback']).rstrip()}\n```"
    failure = functools.partial(
        Diagnostic, code=None, message=message, severity="error", origin="runtime"
    )
    location = _raising_frame(error, root) if status == "user_exception" else None
    if location is not None:
        path, line = location
        return failure(
            line=line,
            column=0,
            end_line=line,
            end_column=10_000,
            path=path,
            entry=entry,
            hover=hover,
        )
    found = entry_definition(entry, root)
    if found is None:
        return None
    path, definition = found
    if definition is None:
        return failure(
            line=1, column=0, end_line=1, end_column=0, path=path, entry=entry, hover=hover
        )
    return failure(
        line=definition.line,
        column=definition.column,
        end_line=definition.line,
        end_column=definition.end_column,
        path=path,
        entry=entry,
        hover=hover,
    )


def entry_result(result: AnalysisResult, root: Path, severity: str) -> EntryResult:
    """Turn the service's AnalysisResult into what the server keeps and shows."""
    report = result.report
    # A report can come with a failure (the program raised after some graphs were
    # captured): show its breaks and the failure.
    findings = break_findings(result.entry, report, root, severity) if report else []
    if result.status != "ok":
        failure = failure_finding(result.entry, result.status, result.error, root)
        findings += [failure] if failure is not None else []
    texts: dict[Path, str] = {}
    for finding in findings:
        if finding.path not in texts:
            try:
                texts[finding.path] = finding.path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                texts[finding.path] = ""
    reached = {
        (_path(str(item["file"]), root), str(item["qualname"]))
        for item in getattr(result, "reached", None) or []
        if item.get("file") and item.get("qualname")
    }
    reached |= {(frame.path, frame.name) for finding in findings for frame in finding.stack}
    function = (report or {}).get("function") or {}
    if function.get("file") and function.get("qualname"):
        reached.add((_path(str(function["file"]), root), str(function["qualname"])))
    return EntryResult(
        entry=result.entry,
        status=result.status,
        report=report,
        error=result.error,
        findings=findings,
        texts=texts,
        duration_s=getattr(result, "duration_s", 0.0),
        reached=frozenset(reached),
    )
