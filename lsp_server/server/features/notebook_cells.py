"""Notebook documents (LSP 3.17): the static rules and quick fixes in Jupyter cells.

The client sends ``notebookDocument/didOpen`` / ``didChange`` / ``didSave`` /
``didClose`` (pygls keeps the notebook and its cells' text documents in the
workspace); every request (hover, code actions, diagnostic pulls) names one
cell's document URI.  Cells' diagnostics are always pushed (:func:`push`
says why).  A notebook is linted as one module, its Python code
cells in order (:mod:`.notebook_lint`), and each finding is stored on its
cell's document, at the line within that cell; from there the usual
diagnostics, hover and code-action features serve cells like files.

A quick fix may edit more than one cell (a fix that needs an import adds it
to the cell holding the notebook's imports): one ``WorkspaceEdit`` with an
edit per cell document.  A fix whose edits would cross a cell boundary,
touch a magic line or land in a later cell than the finding is not offered
(the hover says why).  "Apply all safe fixes" rewrites the combined text and
replaces each changed cell.
"""

from __future__ import annotations

import logging

from lsprotocol import types

from fullgraph.lsp_server import notebooks
from fullgraph.lsp_server.server.features.diagnostics import debounce, document_diagnostics
from fullgraph.lsp_server.server.features.edits import multi_document_edit
from fullgraph.lsp_server.server.features.notebook_lint import refresh_notebook
from fullgraph.lsp_server.server.language_server import FullgraphServer
from fullgraph.lsp_server.server.registry import feature
from fullgraph.lsp_server.server.state import NotebookState

log = logging.getLogger(__name__)


# -- quick fixes ------------------------------------------------------------------


def cell_edit(
    server: FullgraphServer, state: NotebookState, fix: notebooks.CellFix
) -> types.WorkspaceEdit | None:
    """A notebook fix as one workspace edit with an edit per cell document, or None."""
    by_cell = fix.by_cell
    if by_cell is None:
        return None
    edits = {}
    for cell, cell_edits in by_cell.items():
        uri = state.cell_uris[cell]
        mapper = server.mapper(server.document_text(uri) or "")
        edits[uri] = [
            types.TextEdit(range=mapper.range_of(edit), new_text=edit.new_text)
            for edit in cell_edits
        ]
    return multi_document_edit(server, edits)


def fix_all_edit(
    server: FullgraphServer, state: NotebookState, fixed: str
) -> types.WorkspaceEdit | None:
    """Every safe fix of the notebook as whole-cell replacements, or None (nothing, or unsafe)."""
    combined = state.combined
    if combined is None or fixed == combined.text:
        return None
    try:
        texts = combined.split(fixed)
    except notebooks.NotebookError as refusal:
        log.info("no fix-all for the notebook: %s", refusal)
        return None
    edits = {}
    for cell, text in texts.items():
        if text != combined.cells[cell]:
            uri = state.cell_uris[cell]
            whole = server.mapper(combined.cells[cell]).whole_document()
            edits[uri] = [types.TextEdit(range=whole, new_text=text)]
    return multi_document_edit(server, edits) if edits else None


# -- publishing -------------------------------------------------------------------


async def lint_and_publish(server: FullgraphServer, notebook_uri: str) -> None:
    """Lint a notebook and show the results on every cell."""
    try:
        state = await refresh_notebook(server, notebook_uri)
    except Exception:
        log.exception("static analysis of %s failed", notebook_uri)
        return
    for uri in state.cell_uris if state is not None else ():
        push(server, uri)


def push(server: FullgraphServer, cell_uri: str) -> None:
    """Publish a cell's diagnostics, to every client, pulling or not.

    vscode-languageclient 9 never pulls diagnostics for notebook cells
    (microsoft/vscode-languageserver-node#1464, pulls arrive with 10), so
    cells are always pushed, every cell after each lint (an edit to one cell
    can change another's findings); a pull for a cell is answered with an
    empty report (:func:`.diagnostics.pull_diagnostics`), so no client shows
    a finding twice.
    """
    server.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(
            uri=cell_uri,
            diagnostics=document_diagnostics(server, cell_uri),
            version=server.document_version(cell_uri),
        )
    )


def clear(server: FullgraphServer, uri: str) -> None:
    server.documents.pop(uri, None)
    server.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
    )


def schedule(server: FullgraphServer, notebook_uri: str) -> None:
    debounce(server, notebook_uri, lint_and_publish)


# -- features -----------------------------------------------------------------------


@feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
async def did_open_notebook(
    server: FullgraphServer, params: types.DidOpenNotebookDocumentParams
) -> None:
    """Lint a newly opened notebook at once."""
    await lint_and_publish(server, params.notebook_document.uri)


@feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
def did_change_notebook(
    server: FullgraphServer, params: types.DidChangeNotebookDocumentParams
) -> None:
    """Re-lint an edited notebook after the debounce delay."""
    structure = params.change.cells.structure if params.change.cells else None
    for cell in (structure.did_close or []) if structure else []:
        clear(server, cell.uri)  # a deleted cell's squiggles go with it
    schedule(server, params.notebook_document.uri)


@feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
async def did_save_notebook(
    server: FullgraphServer, params: types.DidSaveNotebookDocumentParams
) -> None:
    """Lint a saved notebook now (a save ends the debounce)."""
    await lint_and_publish(server, params.notebook_document.uri)


@feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
def did_close_notebook(
    server: FullgraphServer, params: types.DidCloseNotebookDocumentParams
) -> None:
    """Forget a closed notebook and clear its cells' diagnostics."""
    uri = params.notebook_document.uri
    handle = server.debounce_handles.pop(uri, None)
    if handle is not None:
        handle.cancel()
    server.notebooks.pop(uri, None)
    for cell in params.cell_text_documents:
        clear(server, cell.uri)
