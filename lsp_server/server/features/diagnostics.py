"""Diagnostics: static rules as the user types, runtime findings after analyses.

Static rules run on open at once and on change after a per-document debounce
(``debounceMs``), in a worker thread so the protocol stays responsive
(:mod:`.linting` for files, :mod:`.notebook_lint` for notebooks).

Clients that pull diagnostics (``textDocument/diagnostic``) get them on
request and a ``workspace/diagnostic/refresh`` when runtime results arrive;
every other client gets ``textDocument/publishDiagnostics`` pushes.  Never
both, so no client shows a finding twice.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from lsprotocol import types
from pygls.uris import from_fs_path

from fullgraph.lsp_server.diagnostic import Diagnostic
from fullgraph.lsp_server.server.features.findings import (
    carry_over,
    one_per_site,
    syntax_diagnostic,
    to_diagnostic,
)
from fullgraph.lsp_server.server.features.linting import refresh_file
from fullgraph.lsp_server.server.features.notebook_lint import refresh_notebook
from fullgraph.lsp_server.server.language_server import FullgraphServer, path_of
from fullgraph.lsp_server.server.registry import feature
from fullgraph.lsp_server.server.state import DocumentState

log = logging.getLogger(__name__)


def runtime_findings_for(server: FullgraphServer, path: Path, text: str) -> list[Diagnostic]:
    """Runtime findings in ``path``, moved onto its current ``text``, one per source location."""
    found = []
    for result in list(server.entry_results.values()):
        mine = [finding for finding in result.findings if finding.path == path]
        if mine:
            found += carry_over(mine, result.texts.get(path, text), text)
    return one_per_site(found)


async def refresh_static(server: FullgraphServer, uri: str) -> DocumentState | None:
    """Bring the static results of an open document (a file or a cell) up to date.

    The returned state may belong to an older text when the user kept typing;
    callers compare ``state.text`` with the current text.
    """
    notebook = server.workspace.get_notebook_document(cell_uri=uri)
    if notebook is not None:  # a notebook cell: linted with the notebook's other cells
        await refresh_notebook(server, notebook.uri)
        return server.documents.get(uri)
    return await refresh_file(server, uri)


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
            diagnostics.append(syntax_diagnostic(state.syntax_error, mapper, **options))
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


@feature(types.TEXT_DOCUMENT_DID_OPEN)
async def did_open(server: FullgraphServer, params: types.DidOpenTextDocumentParams) -> None:
    """Lint a newly opened document at once."""
    await lint_and_publish(server, params.text_document.uri)


@feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(server: FullgraphServer, params: types.DidChangeTextDocumentParams) -> None:
    """Re-lint an edited document after the debounce delay."""
    schedule_lint(server, params.text_document.uri)


@feature(types.TEXT_DOCUMENT_DID_CLOSE)
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


@feature(
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
