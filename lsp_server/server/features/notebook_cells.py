"""Notebook documents (LSP 3.17): the static rules and quick fixes in Jupyter cells.

The client sends ``notebookDocument/didOpen`` / ``didChange`` / ``didSave`` /
``didClose`` (pygls keeps the notebook and its cells' text documents in the
workspace); every request (hover, code actions, diagnostic pulls) names one
cell's document URI.  Cells' diagnostics are always pushed (:func:`push`
says why).  A notebook is linted as one module, its Python code
cells in order (:mod:`fullgraph.lsp_server.notebooks`: names from earlier
cells are known, IPython magics are skipped), and each finding is stored on
its cell's document, at the line within that cell, as a
:class:`.diagnostics.DocumentState`; from there the usual diagnostics, hover
and code-action features serve cells like files.

A quick fix may edit more than one cell (a fix that needs an import adds it
to the cell holding the notebook's imports): one ``WorkspaceEdit`` with an
edit per cell document.  A fix whose edits would cross a cell boundary,
touch a magic line or land in a later cell than the finding is not offered
(the hover says why).  "Apply all safe fixes" rewrites the combined text and
replaces each changed cell.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging

from lsprotocol import types
from pygls.uris import to_fs_path

from fullgraph.lsp_server import notebooks
from fullgraph.lsp_server.features.diagnostics import (
    DocumentState,
    advance,
    debounce,
    document_diagnostics,
)
from fullgraph.lsp_server.features.findings import static_finding
from fullgraph.lsp_server.server import SERVER, FullgraphServer

log = logging.getLogger(__name__)


@dataclasses.dataclass
class NotebookState:
    """The static results of one open notebook, for the cell texts in ``key``."""

    key: tuple = ()  # ((cell uri, kind, text), ...) the results belong to
    combined: notebooks.CombinedSource | None = None
    cell_uris: tuple[str, ...] = ()  # cell index -> its document URI


# -- pure helpers -------------------------------------------------------------


def cell_key(server: FullgraphServer, notebook: types.NotebookDocument) -> tuple:
    """What the results depend on: each cell's URI, kind and current text."""
    key = []
    for cell in notebook.cells:
        document = server.open_document(cell.document)
        key.append((cell.document, cell.kind, document.source if document else ""))
    return tuple(key)


def cells_of(server: FullgraphServer, key: tuple) -> list[notebooks.Cell]:
    cells = []
    for index, (uri, kind, text) in enumerate(key):
        document = server.open_document(uri)
        language = getattr(document, "language_id", "python") or "python"
        python = kind == types.NotebookCellKind.Code and language == "python"
        cells.append(notebooks.Cell(index, text, python))
    return cells


def lint_cells(
    server: FullgraphServer, notebook_uri: str, key: tuple
) -> tuple[NotebookState, dict[str, DocumentState]]:
    """Lint the notebook (blocking): its state and each cell document's new state."""
    refactors = server.refactors() if server.settings.diagnostics_static else None
    uris = tuple(uri for uri, _, _ in key)
    if refactors is None:
        return NotebookState(key, None, uris), {uri: DocumentState(text) for uri, _, text in key}
    path = to_fs_path(notebook_uri) or notebook_uri
    rules = getattr(refactors, "RULES", {})
    combined, found = notebooks.lint_notebook(
        cells_of(server, key),
        lambda text: refactors.lint_source(text, path),
        refactors.SourceSyntaxError,
    )
    by_cell: dict[int, list] = {index: [] for index in range(len(key))}
    for item in found:
        if item.finding.code not in server.settings.ignore:
            by_cell[item.cell].append(static_finding(item.finding, rules))
    errors = {error.cell: error for error in combined.syntax_errors}
    states = {}
    for index, (uri, _, text) in enumerate(key):
        previous = server.documents.get(uri) or DocumentState()
        states[uri] = advance(previous, text, by_cell[index], errors.get(index))
    return NotebookState(key, combined, uris), states


async def refresh_notebook(server: FullgraphServer, notebook_uri: str) -> NotebookState | None:
    """Bring a notebook's static results up to date with its cells (one lint at a time)."""
    loop = asyncio.get_running_loop()
    while True:
        notebook = server.workspace.get_notebook_document(notebook_uri=notebook_uri)
        if notebook is None:
            return None
        key = cell_key(server, notebook)
        state = server.notebooks.get(notebook_uri)
        if state is not None and state.key == key:
            return state
        running = server.lints_in_flight.get(notebook_uri)
        if running is None:
            break
        await asyncio.shield(running)
        await asyncio.sleep(0)  # let the lint's owner record its result first
    running = loop.run_in_executor(server.thread_pool, lint_cells, server, notebook_uri, key)
    server.lints_in_flight[notebook_uri] = running
    try:
        state, cell_states = await asyncio.shield(running)
    except Exception:  # a rule bug costs this notebook's squiggles, not the server
        log.exception("static rules failed on %s", notebook_uri)
        return None
    finally:
        server.lints_in_flight.pop(notebook_uri, None)
    if server.workspace.get_notebook_document(notebook_uri=notebook_uri) is not None:
        server.notebooks[notebook_uri] = state
        for uri, cell_state in cell_states.items():
            if server.open_document(uri) is not None:
                server.documents[uri] = cell_state
    return state


def notebook_of_cell(server: FullgraphServer, cell_uri: str) -> str | None:
    notebook = server.workspace.get_notebook_document(cell_uri=cell_uri)
    return notebook.uri if notebook is not None else None


def cell_edit(
    server: FullgraphServer, state: NotebookState, fix: notebooks.CellFix
) -> types.WorkspaceEdit | None:
    """A notebook fix as one workspace edit with an edit per cell document, or None."""
    from fullgraph.lsp_server.features.code_actions import multi_document_edit

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
    from fullgraph.lsp_server.features.code_actions import multi_document_edit

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


@SERVER.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
async def did_open_notebook(
    server: FullgraphServer, params: types.DidOpenNotebookDocumentParams
) -> None:
    """Lint a newly opened notebook at once."""
    await lint_and_publish(server, params.notebook_document.uri)


@SERVER.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
def did_change_notebook(
    server: FullgraphServer, params: types.DidChangeNotebookDocumentParams
) -> None:
    """Re-lint an edited notebook after the debounce delay."""
    structure = params.change.cells.structure if params.change.cells else None
    for cell in (structure.did_close or []) if structure else []:
        clear(server, cell.uri)  # a deleted cell's squiggles go with it
    schedule(server, params.notebook_document.uri)


@SERVER.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
async def did_save_notebook(
    server: FullgraphServer, params: types.DidSaveNotebookDocumentParams
) -> None:
    """Lint a saved notebook now (a save ends the debounce)."""
    await lint_and_publish(server, params.notebook_document.uri)


@SERVER.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
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
