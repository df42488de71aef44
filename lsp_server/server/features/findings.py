"""Diagnostics as LSP shows them: the shared model converted, and carried over edits.

Two kinds of :class:`~fullgraph.lsp_server.diagnostic.Diagnostic` reach the
editor: a static rule's finding (``FG1xx``; it may carry a safe fix) and a
runtime analysis's graph break (``FG2xx``) or failure (no code; the user's
program raised, crashed or timed out).  Both keep fullgraph's coordinates
(1-based lines, code-point columns) and are turned into ``lsprotocol``
diagnostics by :func:`to_diagnostic` through the position helper.
:func:`carry_over` moves findings computed on an older text onto a newer one,
dropping those whose lines changed: it is how diagnostics survive a syntax
error in the middle of an edit, and how runtime results stay in place while
the user types after a save.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path

from fullgraph.lsp_server.break_sites import by_site, caller_chain
from fullgraph.lsp_server.diagnostic import SYNTAX_ERROR_CODE, Diagnostic, StackFrame
from fullgraph.lsp_server.positions import PositionMapper, split_lines
from fullgraph.lsp_server.server.state import SyntaxProblem

SOURCE = "fullgraph"

SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "information": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}

# The repository's own docs, found when fullgraph runs from a checkout or an
# editable install (lsp_server/server/features/findings.py -> repository root).
_REPOSITORY_ROOT = Path(__file__).resolve().parents[3]


@functools.lru_cache(maxsize=512)
def doc_href(code: str | None, root: Path | None, base_url: str) -> str | None:
    """Link to a code's documentation: a local file when one exists, else ``base_url``.

    Cached: diagnostics are rebuilt on every edit and each lookup touches the disk.
    """
    if not code:
        return None
    folders = ("rules", "codes") if code.startswith("FG1") else ("codes", "rules")
    for docs_root in filter(None, (root, _REPOSITORY_ROOT)):
        for folder in folders:
            candidate = docs_root / "docs" / folder / f"{code}.md"
            if candidate.is_file():
                return from_fs_path(str(candidate))
    return f"{base_url.rstrip('/')}/{folders[0]}/{code}.md"


def to_diagnostic(
    finding: Diagnostic,
    mapper: PositionMapper,
    *,
    root: Path | None,
    docs_base_url: str,
) -> types.Diagnostic:
    """The LSP diagnostic for one finding, positioned in the client's encoding."""
    href = doc_href(finding.code, root, docs_base_url)
    related = None
    if finding.stack:
        # Each frame names the chain that reached it: "Model.forward → Block.forward".
        names = [frame.name for frame in finding.stack]
        related = [
            types.DiagnosticRelatedInformation(
                location=types.Location(
                    uri=from_fs_path(str(frame.path)),
                    range=_frame_range(frame, finding.path, mapper),
                ),
                message=f"{index}. {caller_chain(names[:index])}",
            )
            for index, frame in enumerate(finding.stack, start=1)
        ]
    data: dict[str, Any] = {"kind": finding.origin}
    if finding.origin == "runtime":
        data["entry"] = finding.entry
        data["entries"] = list(finding.entries or [finding.entry])
    return types.Diagnostic(
        range=mapper.range_of(finding),
        message=finding.message,
        severity=SEVERITY.get(finding.severity, types.DiagnosticSeverity.Warning),
        code=finding.code,
        code_description=types.CodeDescription(href=href) if href else None,
        source=SOURCE,
        related_information=related,
        data=data,
    )


def _frame_range(frame: StackFrame, finding_path: Path, mapper: PositionMapper) -> types.Range:
    """A zero-width range at a stack frame's call, what editors jump to."""
    if frame.path != finding_path:
        # Another file: convert with its own text as saved (the one that ran).
        try:
            mapper = PositionMapper(frame.path.read_text(encoding="utf-8"), mapper.encoding)
        except (OSError, UnicodeDecodeError):
            position = types.Position(line=max(frame.line - 1, 0), character=max(frame.column, 0))
            return types.Range(start=position, end=position)
    return mapper.range(frame.line, frame.column, frame.line, frame.column)


def syntax_diagnostic(
    error: SyntaxProblem, mapper: PositionMapper, *, root: Path | None, docs_base_url: str
) -> types.Diagnostic:
    """One information diagnostic saying why the static results are paused.

    Its code is FG001, as ``fullgraph check`` and SARIF report the same error,
    linked to docs/codes/FG001.md like every other code.
    """
    line = getattr(error, "line", 1) or 1
    column = getattr(error, "column", 0) or 0
    message = getattr(error, "message", None) or str(error)
    href = doc_href(SYNTAX_ERROR_CODE, root, docs_base_url)
    return types.Diagnostic(
        range=mapper.range(line, column, line, column + 1),
        message=f"fullgraph cannot parse this file ({message}); "
        "showing results from the last version that parsed",
        severity=types.DiagnosticSeverity.Information,
        code=SYNTAX_ERROR_CODE,
        code_description=types.CodeDescription(href=href) if href else None,
        source=SOURCE,
        data={"kind": "syntax"},
    )


def one_per_site(findings: list[Diagnostic]) -> list[Diagnostic]:
    """Runtime findings with one per source location, naming every entrypoint that reached it.

    The same grouping ``fullgraph check`` prints with
    (:func:`fullgraph.lsp_server.break_sites.by_site`); failures of an analysis
    (no code) stay one per entrypoint.
    """
    failures = [f for f in findings if f.origin != "runtime" or f.code is None]
    sites = by_site(
        ((f.entry, f) for f in findings if f.origin == "runtime" and f.code is not None),
        key=lambda finding: finding.site,
    )
    merged = []
    for finding, entries in sites:
        hover = finding.hover
        if len(entries) > 1:
            hover += "\n\n**Reached from entrypoints** " + ", ".join(f"`{e}`" for e in entries)
        merged.append(dataclasses.replace(finding, entries=list(entries), hover=hover))
    return merged + failures


def line_mapping(old_text: str, new_text: str) -> dict[int, int]:
    """1-based old line -> 1-based new line, for lines the edit left untouched."""
    old_lines = split_lines(old_text)
    new_lines = split_lines(new_text)
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    mapping: dict[int, int] = {}
    for tag, old_start, old_end, new_start, _ in matcher.get_opcodes():
        if tag == "equal":
            for offset in range(old_end - old_start):
                mapping[old_start + offset + 1] = new_start + offset + 1
    return mapping


def carry_over(findings: list[Diagnostic], old_text: str, new_text: str) -> list[Diagnostic]:
    """The findings whose lines are unchanged in ``new_text``, moved to their new lines.

    A finding survives only when every line it spans is untouched and still
    contiguous; its fix is dropped, because a fix was proven safe for the old
    text as a whole, not for the new one.
    """
    if old_text == new_text:
        return list(findings)
    mapping = line_mapping(old_text, new_text)
    survivors = []
    for finding in findings:
        lines = range(finding.line, finding.end_line + 1)
        moved = [mapping.get(line) for line in lines]
        if None in moved or moved[-1] - moved[0] != finding.end_line - finding.line:
            continue
        survivors.append(dataclasses.replace(finding, line=moved[0], end_line=moved[-1], fix=None))
    return survivors
