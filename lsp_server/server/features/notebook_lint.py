"""The static rules on one open notebook, cells linted as one module (no LSP registration).

A notebook is linted as one module, its Python code cells in order
(:mod:`fullgraph.lsp_server.notebooks`: names from earlier cells are known,
IPython magics are skipped), and each finding is stored on its cell's
document, at the line within that cell, as a
:class:`~fullgraph.lsp_server.server.state.DocumentState`; from there the usual
diagnostics, hover and code-action features serve cells like files.
"""

from __future__ import annotations

import asyncio
import logging

from lsprotocol import types
from pygls.uris import to_fs_path

from fullgraph.lsp_server import notebooks
from fullgraph.lsp_server.diagnostic import Diagnostic
from fullgraph.lsp_server.server.features.linting import advance
from fullgraph.lsp_server.server.language_server import FullgraphServer
from fullgraph.lsp_server.server.state import DocumentState, NotebookState
from fullgraph.refactors import RULES, SourceSyntaxError, lint_source

log = logging.getLogger(__name__)


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
    uris = tuple(uri for uri, _, _ in key)
    if not server.settings.diagnostics_static:
        return NotebookState(key, None, uris), {uri: DocumentState(text) for uri, _, text in key}
    path = to_fs_path(notebook_uri) or notebook_uri
    combined, found = notebooks.lint_notebook(
        cells_of(server, key), lambda text: lint_source(text, path), SourceSyntaxError
    )
    by_cell: dict[int, list[Diagnostic]] = {index: [] for index in range(len(key))}
    for item in found:
        if item.finding.code not in server.settings.ignore:
            by_cell[item.cell].append(Diagnostic.from_finding(item.finding, rules=RULES))
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
