"""Diagnostics: static rules as the user types, runtime findings after analyses.

Static rules run on open at once and on change after a per-document debounce
(``debounceMs``), in a worker thread so the protocol stays responsive.  Each
open document keeps a refactors ``IncrementalLinter``: the first lint of a file
runs every rule, later ones only on the top-level statements an edit reached
(with the same findings as ``lint_source``).  When the text does not parse, the
last good findings are carried over to the lines the edit did not touch, next
to one information diagnostic saying why.

Clients that pull diagnostics (``textDocument/diagnostic``) get them on
request and a ``workspace/diagnostic/refresh`` when runtime results arrive;
every other client gets ``textDocument/publishDiagnostics`` pushes.  Never
both, so no client shows a finding twice.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path

from fullgraph.lsp_server.features.findings import (
    StaticFinding,
    carry_over,
    one_per_site,
    static_finding,
    syntax_diagnostic,
    to_diagnostic,
)
from fullgraph.lsp_server.server import SERVER, FullgraphServer

log = logging.getLogger(__name__)


@dataclasses.dataclass
class DocumentState:
    """Static results of one open document."""

    text: str | None = None  # the text `findings` belong to
    findings: list[StaticFinding] = dataclasses.field(default_factory=list)
    syntax_error: Any = None  # the refactors' SourceSyntaxError when `text` did not parse
    good_text: str | None = None  # the last text that parsed, and its findings
    good_findings: list[StaticFinding] = dataclasses.field(default_factory=list)
    # The refactors' IncrementalLinter of the document, with its per-chunk cache.
    linter: Any = None


# -- pure helpers -------------------------------------------------------------


def lint(
    refactors: Any,
    text: str,
    path: str,
    ignore: list[str],
    linter: Any = None,
    entrypoints: Any = (),
) -> tuple[list[StaticFinding], Any]:
    """Run the static rules (through ``linter`` when given): (findings, None) or ([], the error)."""
    try:
        if linter is not None:
            raw = linter.lint(text)
        elif entrypoints:
            raw = refactors.lint_source(text, path, entrypoints=entrypoints)
        else:
            raw = refactors.lint_source(text, path)
    except refactors.SourceSyntaxError as error:
        return [], error
    rules = getattr(refactors, "RULES", {})
    return [static_finding(f, rules) for f in raw if f.code not in ignore], None


def document_linter(refactors: Any, state: DocumentState, path: str, entrypoints: Any = ()) -> Any:
    """The document's incremental linter, or None when the refactors backend has none.

    ``entrypoints``: functions of the file that compiled code elsewhere calls; a
    new set (another file was saved) starts a new linter.
    """
    factory = getattr(refactors, "IncrementalLinter", None)
    if factory is None:
        return None
    linter = state.linter
    if (
        not isinstance(linter, factory)
        or linter.path != path
        or linter.entrypoints != tuple(entrypoints)
    ):
        linter = factory(path, entrypoints=entrypoints)
    return linter


def called_from_elsewhere(server: FullgraphServer, refactors: Any, path: Path | None) -> dict:
    """Functions of ``path`` that a compiled function of another workspace file calls
    (as saved on disk), each with the reason: their prints break that graph too."""
    finder = getattr(refactors, "workspace_entrypoints", None)
    if path is None or finder is None or path.suffix != ".py":
        return {}
    try:
        return server.workspace_calls().of([path], finder).get(path.resolve(), {})
    except Exception:  # the scan is a bonus: a failure must not cost the file its lint
        log.exception("reading the workspace's calls into %s failed", path)
        return {}


def advance(
    state: DocumentState, text: str, findings: list[StaticFinding], syntax_error: Any
) -> DocumentState:
    """The document's next state after linting ``text``."""
    if syntax_error is None:
        return DocumentState(text, findings, None, text, findings)
    carried = (
        carry_over(state.good_findings, state.good_text, text)
        if state.good_text is not None
        else []
    )
    return DocumentState(text, carried, syntax_error, state.good_text, state.good_findings)


def runtime_findings_for(server: FullgraphServer, path: Path, text: str) -> list:
    """Runtime findings in ``path``, moved onto its current ``text``, one per source location."""
    found = []
    for result in list(server.entry_results.values()):
        mine = [finding for finding in result.findings if finding.path == path]
        if mine:
            found += carry_over(mine, result.texts.get(path, text), text)
    return one_per_site(found)


def path_of(uri: str) -> Path | None:
    path = to_fs_path(uri)
    return Path(path).resolve() if path else None


# -- state and publishing -------------------------------------------------------


def compute_static(server: FullgraphServer, uri: str, text: str) -> DocumentState:
    """Lint ``text`` (blocking) and return the document's new state (not yet stored)."""
    state = server.documents.get(uri) or DocumentState()
    refactors = server.refactors() if server.settings.diagnostics_static else None
    if refactors is None:
        return DocumentState(text)
    path = path_of(uri)
    where = str(path) if path else uri
    entrypoints = called_from_elsewhere(server, refactors, path)
    linter = document_linter(refactors, state, where, entrypoints)
    try:
        findings, error = lint(refactors, text, where, server.settings.ignore, linter, entrypoints)
    except Exception as crash:  # a rule bug: keep what we had, say so once per document
        log.exception("static rules failed on %s", uri)
        if uri not in server.lint_failures_reported:
            server.lint_failures_reported.add(uri)
            server.show(
                f"fullgraph: the static rules failed on {path or uri} ({crash!r}); see the log"
            )
        carried = carry_over(state.good_findings, state.good_text, text) if state.good_text else []
        return DocumentState(text, carried, None, state.good_text, state.good_findings, linter)
    return dataclasses.replace(advance(state, text, findings, error), linter=linter)


async def refresh_static(server: FullgraphServer, uri: str) -> DocumentState | None:
    """Bring the static results of an open document up to date with its text.

    One lint per document at a time: a request that arrives while a lint runs
    waits for it instead of starting another (linting a large file takes a
    while, and parallel runs would only compete for the same CPU).  The
    returned state may belong to an older text when the user kept typing;
    callers compare ``state.text`` with the current text.
    """
    notebook = server.workspace.get_notebook_document(cell_uri=uri)
    if notebook is not None:  # a notebook cell: linted with the notebook's other cells
        from fullgraph.lsp_server.features.notebook_cells import refresh_notebook

        await refresh_notebook(server, notebook.uri)
        return server.documents.get(uri)
    loop = asyncio.get_running_loop()
    while True:
        text = server.document_text(uri)
        if text is None:
            return None
        state = server.documents.get(uri)
        if state is not None and state.text == text:
            return state
        running = server.lints_in_flight.get(uri)
        if running is None:
            break
        await asyncio.shield(running)
        # Awaiting a finished future does not yield to the event loop: give the lint's
        # owner its turn to record the result, or this loop would spin forever.
        await asyncio.sleep(0)
        if server.document_text(uri) != text:  # edited meanwhile: the debounce re-lints
            return server.documents.get(uri)
    running = loop.run_in_executor(server.thread_pool, compute_static, server, uri, text)
    server.lints_in_flight[uri] = running
    try:
        new_state = await asyncio.shield(running)
    finally:
        server.lints_in_flight.pop(uri, None)
    if server.open_document(uri) is not None:
        server.documents[uri] = new_state
    return new_state


def document_diagnostics(server: FullgraphServer, uri: str) -> list[types.Diagnostic]:
    """All diagnostics of ``uri`` for its current text."""
    text = server.document_text(uri)
    if text is None:
        return []
    mapper = server.mapper(text)
    options = {"root": server.root, "docs_base_url": server.settings.docs_base_url}
    diagnostics = []
    state = server.documents.get(uri)
    if state is not None and state.text is not None:
        static = (
            state.findings if state.text == text else carry_over(state.findings, state.text, text)
        )
        diagnostics += [to_diagnostic(f, mapper, **options) for f in static]
        if state.syntax_error is not None and state.text == text:
            diagnostics.append(syntax_diagnostic(state.syntax_error, mapper))
    path = path_of(uri)
    if path is not None:
        diagnostics += [
            to_diagnostic(f, mapper, **options) for f in runtime_findings_for(server, path, text)
        ]
    return diagnostics


def publish(server: FullgraphServer, uri: str) -> None:
    """Push the diagnostics of ``uri`` to clients that do not pull them."""
    if server.supports_pull_diagnostics:
        return
    server.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(
            uri=uri,
            diagnostics=document_diagnostics(server, uri),
            version=server.document_version(uri),
        )
    )


def publish_runtime(server: FullgraphServer, paths: set[Path]) -> None:
    """Show new runtime results: a refresh for pulling clients, pushes for the rest."""
    if server.supports_pull_diagnostics:
        if server.supports_diagnostic_refresh:
            server.workspace_diagnostic_refresh(None)
        return
    for path in paths:
        publish(server, from_fs_path(str(path)))


async def lint_and_publish(server: FullgraphServer, uri: str) -> None:
    try:
        await refresh_static(server, uri)
        publish(server, uri)
    except Exception:  # a rule bug must cost this document's squiggles, not the server
        log.exception("static analysis of %s failed", uri)


def debounce(server: FullgraphServer, uri: str, lint) -> None:
    """Run ``lint(server, uri)`` once the user has paused typing for ``debounceMs``
    (a text document's or a notebook's: each edit restarts the wait)."""
    handle = server.debounce_handles.pop(uri, None)
    if handle is not None:
        handle.cancel()
    loop = asyncio.get_running_loop()
    server.debounce_handles[uri] = loop.call_later(
        server.settings.debounce_ms / 1000,
        lambda: asyncio.ensure_future(lint(server, uri)),
    )


def schedule_lint(server: FullgraphServer, uri: str) -> None:
    """Lint the text document ``uri`` after the debounce delay."""
    debounce(server, uri, lint_and_publish)


# -- features -------------------------------------------------------------------


@SERVER.feature(types.TEXT_DOCUMENT_DID_OPEN)
async def did_open(server: FullgraphServer, params: types.DidOpenTextDocumentParams) -> None:
    """Lint a newly opened document at once."""
    await lint_and_publish(server, params.text_document.uri)


@SERVER.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(server: FullgraphServer, params: types.DidChangeTextDocumentParams) -> None:
    """Re-lint an edited document after the debounce delay."""
    schedule_lint(server, params.text_document.uri)


@SERVER.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(server: FullgraphServer, params: types.DidCloseTextDocumentParams) -> None:
    """Forget a closed document (its linter too) and clear its diagnostics."""
    uri = params.text_document.uri
    handle = server.debounce_handles.pop(uri, None)
    if handle is not None:
        handle.cancel()
    server.documents.pop(uri, None)
    if not server.supports_pull_diagnostics:
        server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
        )


@SERVER.feature(
    types.TEXT_DOCUMENT_DIAGNOSTIC,
    types.DiagnosticOptions(
        identifier="fullgraph", inter_file_dependencies=False, workspace_diagnostics=False
    ),
)
async def pull_diagnostics(server: FullgraphServer, params: types.DocumentDiagnosticParams):
    """Answer a client's diagnostic pull with the document's current findings."""
    if server.workspace.get_notebook_document(cell_uri=params.text_document.uri) is not None:
        # A notebook cell's findings are pushed (features.notebook_cells.push): never both.
        return types.RelatedFullDocumentDiagnosticReport(items=[])
    await refresh_static(server, params.text_document.uri)
    return types.RelatedFullDocumentDiagnosticReport(
        items=document_diagnostics(server, params.text_document.uri)
    )
