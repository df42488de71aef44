"""End to end over stdio: a Jupyter notebook opened as an LSP 3.17 notebook document.

The client opens ``notebooks/gate.ipynb`` the way VS Code does: one
``notebookDocument/didOpen`` with a text document per cell (cell URIs in the
``vscode-notebook-cell`` scheme).  Alone, no cell has a finding (cell 3 uses
``nn`` and cell 5 ``torch`` from cell 2's imports); linted together, cell 3
has FG101 and cell 5 FG102, each on its own cell's URI at the line within
that cell.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import pytest_lsp
from lsp_helpers import (
    SERVER_COMMAND,
    encoding,
    initialize_params,
    needs_refactors,
    pulls,
    server_env,
    uri_of,
    wait_until,
    with_code,
)
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient
from test_lsp_static import apply_edits, edits_for

pytestmark = [pytest.mark.asyncio, needs_refactors]


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=SERVER_COMMAND, server_env=server_env()),
    params=["neovim@v0.7.0", "neovim@v0.11.0"],
)
async def notebook_client(lsp_client: LanguageClient, workspace: Path, request):
    """A client that supports notebook documents, pushed (0.7) or pulling (0.11) diagnostics."""
    capabilities = pytest_lsp.client_capabilities(request.param)
    capabilities.notebook_document = types.NotebookDocumentClientCapabilities(
        synchronization=types.NotebookDocumentSyncClientCapabilities()
    )
    result = await lsp_client.initialize_session(initialize_params(workspace, capabilities))
    lsp_client.init_result = result
    yield
    await lsp_client.shutdown_session()


async def cell_diagnostics(client: LanguageClient, uri: str, until=lambda items: True) -> list:
    """A cell's diagnostics once ``until`` holds: pushed, to pulling clients too."""
    await wait_until(
        lambda: uri in client.diagnostics and until(client.diagnostics[uri]),
        what="cell diagnostics",
    )
    return list(client.diagnostics[uri])


def notebook_cells(path: Path) -> list[tuple[str, str]]:
    """(cell_type, text) of each cell of the .ipynb file."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return [(cell["cell_type"], "".join(cell["source"])) for cell in data["cells"]]


def cell_uri(path: Path, index: int) -> str:
    return f"vscode-notebook-cell:{path.as_posix()}#W{index}sZmlsZQ%3D%3D"


def open_notebook(client: LanguageClient, path: Path) -> tuple[str, list[str], list[str]]:
    cells = notebook_cells(path)
    uris = [cell_uri(path, index) for index in range(len(cells))]
    notebook_uri = uri_of(path)
    client.notebook_document_did_open(
        types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(
                uri=notebook_uri,
                notebook_type="jupyter-notebook",
                version=1,
                cells=[
                    types.NotebookCell(
                        kind=types.NotebookCellKind.Code
                        if kind == "code"
                        else types.NotebookCellKind.Markup,
                        document=uri,
                    )
                    for (kind, _), uri in zip(cells, uris)
                ],
            ),
            cell_text_documents=[
                types.TextDocumentItem(
                    uri=uri,
                    language_id="python" if kind == "code" else "markdown",
                    version=1,
                    text=text,
                )
                for (kind, text), uri in zip(cells, uris)
            ],
        )
    )
    return notebook_uri, uris, [text for _, text in cells]


def change_cells(client, notebook_uri: str, version: int, texts: dict[str, str]) -> None:
    client.notebook_document_did_change(
        types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(
                uri=notebook_uri, version=version
            ),
            change=types.NotebookDocumentChangeEvent(
                cells=types.NotebookDocumentCellChanges(
                    text_content=[
                        types.NotebookDocumentCellContentChanges(
                            document=types.VersionedTextDocumentIdentifier(
                                uri=uri, version=version
                            ),
                            changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
                        )
                        for uri, text in texts.items()
                    ]
                )
            ),
        )
    )


async def test_server_declares_jupyter_notebook_sync(notebook_client: LanguageClient):
    sync = notebook_client.init_result.capabilities.notebook_document_sync
    (selector,) = sync.notebook_selector
    assert selector.notebook == "jupyter-notebook"
    assert [cell.language for cell in selector.cells] == ["python"]


async def test_findings_are_on_their_cell_at_the_line_within_it(
    notebook_client: LanguageClient, workspace: Path
):
    path = workspace / "notebooks/gate.ipynb"
    _, uris, _ = open_notebook(notebook_client, path)
    items = await cell_diagnostics(
        notebook_client, uris[2], lambda items: with_code(items, "FG101")
    )
    (branch,) = with_code(items, "FG101")
    assert (branch.range.start.line, branch.range.start.character) == (2, 11)  # `x.sum() > 0`
    items = await cell_diagnostics(
        notebook_client, uris[4], lambda items: with_code(items, "FG102")
    )
    (printed,) = with_code(items, "FG102")
    assert (printed.range.start.line, printed.range.start.character) == (2, 4)
    assert printed.code_description.href.endswith("docs/rules/FG102.md")
    # The magic cells and the markdown cell have nothing, and nothing says "cannot parse".
    for index in (0, 1, 3, 5):
        assert await cell_diagnostics(notebook_client, uris[index]) == []
    hover = await notebook_client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uris[2]), position=branch.range.start
        )
    )
    assert "FG101" in hover.contents.value and "Quick fix available" in hover.contents.value


async def test_quick_fix_edits_the_cells_and_the_finding_goes(
    notebook_client: LanguageClient, workspace: Path
):
    path = workspace / "notebooks/gate.ipynb"
    on_disk = path.read_bytes()
    notebook_uri, uris, texts = open_notebook(notebook_client, path)
    items = await cell_diagnostics(
        notebook_client, uris[4], lambda items: with_code(items, "FG102")
    )
    (printed,) = with_code(items, "FG102")
    actions = await notebook_client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uris[4]),
            range=printed.range,
            context=types.CodeActionContext(
                diagnostics=[printed], only=[types.CodeActionKind.QuickFix]
            ),
        )
    )
    titles = [action.title for action in actions]
    assert "fullgraph: disable FG102 for this line" in titles
    (fix,) = [a for a in actions if "FG102" in a.title and "disable" not in a.title]
    # The deferred-effects import goes to the imports' cell (2); the rewrite to cell 5.
    fixed = {}
    for index in (1, 4):
        edits = edits_for(fix.edit, uris[index])
        assert edits, f"no edit for cell {index + 1}"
        fixed[uris[index]] = apply_edits(texts[index], edits, encoding(notebook_client))
    assert fixed[uris[1]].startswith("from fullgraph.refactors.support import")
    assert "%matplotlib inline" in fixed[uris[1]]
    assert "deferred(print" in fixed[uris[4]]
    change_cells(notebook_client, notebook_uri, 2, fixed)
    await cell_diagnostics(notebook_client, uris[4], lambda items: not with_code(items, "FG102"))
    items = await cell_diagnostics(
        notebook_client, uris[2], lambda items: with_code(items, "FG101")
    )
    assert with_code(items, "FG101"), "the other cell's finding stays"
    assert path.read_bytes() == on_disk  # the server proposed edits; it wrote nothing


async def test_fix_all_replaces_the_changed_cells(notebook_client: LanguageClient, workspace: Path):
    path = workspace / "notebooks/gate.ipynb"
    _, uris, texts = open_notebook(notebook_client, path)
    await cell_diagnostics(notebook_client, uris[2], lambda items: with_code(items, "FG101"))
    actions = await notebook_client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uris[2]),
            range=types.Range(
                start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)
            ),
            context=types.CodeActionContext(
                diagnostics=[], only=[types.CodeActionKind.SourceFixAll]
            ),
        )
    )
    (fix_all,) = actions
    changed = {index for index, uri in enumerate(uris) if edits_for_or_none(fix_all.edit, uri)}
    assert changed == {1, 2, 4}
    cell3 = apply_edits(texts[2], edits_for(fix_all.edit, uris[2]), encoding(notebook_client))
    assert "torch.where(x.sum() > 0, x * 2, x - 1)" in cell3


def edits_for_or_none(edit: types.WorkspaceEdit, uri: str):
    if edit.document_changes:
        return [c for c in edit.document_changes if c.text_document.uri == uri]
    return (edit.changes or {}).get(uri)


async def test_an_edit_in_an_earlier_cell_changes_a_later_cells_findings(
    notebook_client: LanguageClient, workspace: Path
):
    path = workspace / "notebooks/gate.ipynb"
    notebook_uri, uris, texts = open_notebook(notebook_client, path)
    await cell_diagnostics(notebook_client, uris[4], lambda items: with_code(items, "FG102"))
    # Without cell 2's `import torch`, `@torch.compile` in cell 5 is not torch's: no
    # compiled region, no FG102; with it back, the finding returns.
    change_cells(notebook_client, notebook_uri, 2, {uris[1]: "%matplotlib inline\n"})
    await cell_diagnostics(notebook_client, uris[4], lambda items: not with_code(items, "FG102"))
    change_cells(notebook_client, notebook_uri, 3, {uris[1]: texts[1]})
    await cell_diagnostics(notebook_client, uris[4], lambda items: with_code(items, "FG102"))


async def test_a_cell_that_does_not_parse_is_reported_there_alone(
    notebook_client: LanguageClient, workspace: Path
):
    path = workspace / "notebooks/gate.ipynb"
    notebook_uri, uris, _ = open_notebook(notebook_client, path)
    await cell_diagnostics(notebook_client, uris[2], lambda items: with_code(items, "FG101"))
    change_cells(notebook_client, notebook_uri, 2, {uris[3]: "def half(:\n"})
    items = await cell_diagnostics(
        notebook_client, uris[3], lambda items: any("cannot parse" in d.message for d in items)
    )
    assert items[0].range.start.line == 0
    assert with_code(await cell_diagnostics(notebook_client, uris[4]), "FG102"), "other cells go on"


async def test_cells_are_pushed_and_a_pull_for_a_cell_is_empty(
    notebook_client: LanguageClient, workspace: Path
):
    # VS Code's client (vscode-languageclient 9) never pulls cells: they are pushed to
    # every client, and a client that does pull one gets nothing more (never twice).
    path = workspace / "notebooks/gate.ipynb"
    _, uris, _ = open_notebook(notebook_client, path)
    await cell_diagnostics(notebook_client, uris[2], lambda items: with_code(items, "FG101"))
    if pulls(notebook_client):
        report = await notebook_client.text_document_diagnostic_async(
            types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uris[2]))
        )
        assert list(report.items) == []


async def test_closing_the_notebook_clears_its_cells(
    notebook_client: LanguageClient, workspace: Path
):
    path = workspace / "notebooks/gate.ipynb"
    notebook_uri, uris, _ = open_notebook(notebook_client, path)
    await wait_until(lambda: with_code(notebook_client.diagnostics.get(uris[4], []), "FG102"))
    notebook_client.notebook_document_did_close(
        types.DidCloseNotebookDocumentParams(
            notebook_document=types.NotebookDocumentIdentifier(uri=notebook_uri),
            cell_text_documents=[types.TextDocumentIdentifier(uri=uri) for uri in uris],
        )
    )
    await wait_until(
        lambda: not notebook_client.diagnostics.get(uris[4], ["missing"]), what="cleared"
    )


async def test_a_fix_whose_import_would_land_in_a_later_cell_is_not_offered(
    notebook_client: LanguageClient, workspace: Path
):
    # The notebook's last import is in cell 3, after the print in cell 2: the FG102
    # quick fix's import would run after the code that needs it.
    path = workspace / "notebooks/late_import.ipynb"
    sources = [
        "import torch",
        '@torch.compile\ndef noisy(x):\n    print("x", x)\n    return x + 1',
        "import os\nprint(os.getcwd())",
    ]
    path.write_text(
        json.dumps(
            {
                "cells": [
                    {"cell_type": "code", "metadata": {}, "outputs": [], "source": [s]}
                    for s in sources
                ],
                "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
                "nbformat": 4,
                "nbformat_minor": 5,
            }
        ),
        encoding="utf-8",
    )
    _, uris, _ = open_notebook(notebook_client, path)
    items = await cell_diagnostics(
        notebook_client, uris[1], lambda items: with_code(items, "FG102")
    )
    (printed,) = with_code(items, "FG102")
    actions = await notebook_client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uris[1]),
            range=printed.range,
            context=types.CodeActionContext(
                diagnostics=[printed], only=[types.CodeActionKind.QuickFix]
            ),
        )
    )
    assert [action.title for action in actions or []] == ["fullgraph: disable FG102 for this line"]
    hover = await notebook_client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uris[1]), position=printed.range.start
        )
    )
    assert "No quick fix in this notebook" in hover.contents.value
    assert "move the notebook's imports to its first cell" in hover.contents.value


async def test_deleting_a_cell_clears_its_findings(
    notebook_client: LanguageClient, workspace: Path
):
    path = workspace / "notebooks/gate.ipynb"
    notebook_uri, uris, _ = open_notebook(notebook_client, path)
    await cell_diagnostics(notebook_client, uris[4], lambda items: with_code(items, "FG102"))
    notebook_client.notebook_document_did_change(
        types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(
                uri=notebook_uri, version=2
            ),
            change=types.NotebookDocumentChangeEvent(
                cells=types.NotebookDocumentCellChanges(
                    structure=types.NotebookDocumentCellChangeStructure(
                        array=types.NotebookCellArrayChange(start=4, delete_count=1),
                        did_close=[types.TextDocumentIdentifier(uri=uris[4])],
                    )
                )
            ),
        )
    )
    await cell_diagnostics(notebook_client, uris[4], lambda items: not items)
    # The cells after it moved up; cell 3's finding is still where it was.
    items = await cell_diagnostics(
        notebook_client, uris[2], lambda items: with_code(items, "FG101")
    )
    assert with_code(items, "FG101")[0].range.start.line == 2


async def test_a_settings_change_relints_the_notebook(
    notebook_client: LanguageClient, workspace: Path
):
    path = workspace / "notebooks/gate.ipynb"
    _, uris, _ = open_notebook(notebook_client, path)
    await cell_diagnostics(notebook_client, uris[4], lambda items: with_code(items, "FG102"))
    notebook_client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"fullgraph": {"ignore": ["FG102"]}})
    )
    await cell_diagnostics(notebook_client, uris[4], lambda items: not with_code(items, "FG102"))
    items = await cell_diagnostics(notebook_client, uris[2])
    assert with_code(items, "FG101"), "the other codes stay"
