"""A print in a helper that compiled code of another file calls: found in the editor too.

``fullgraph check`` reads the whole workspace to find such helpers
(``refactors.workspace_entrypoints``); the language server asks the same scan on
every lint, as the files are on disk, so a saved edit of the caller counts.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_helpers import diagnostics, needs_refactors, open_document, with_code
from lsprotocol import types
from pytest_lsp import LanguageClient

HELPER = 'def announce(x):\n    print("announcing", x.shape)\n    return x * 2\n'
CALLER = """import torch
from torch import nn

from .announce import announce


class Caller(nn.Module):
    def forward(self, x):
        return announce(x) + 1
"""
NOT_CALLING = CALLER.replace("announce(x) + 1", "x + 1")


@pytest.mark.asyncio
@needs_refactors
async def test_a_helper_called_from_compiled_code_elsewhere_has_its_print_found(
    client: LanguageClient, workspace: Path
):
    models = workspace / "models"
    (models / "announce.py").write_text(HELPER)
    caller = models / "caller.py"
    caller.write_text(CALLER)
    uri = open_document(client, models / "announce.py", HELPER)
    items = await diagnostics(client, uri, lambda items: with_code(items, "FG102"))
    (found,) = with_code(items, "FG102")
    assert found.range.start.line == 1  # the print, in the helper's own file
    assert "compiled region" in found.message
    # The caller saved without the call: the helper is plain Python again.
    caller.write_text(NOT_CALLING)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=HELPER + "\n")],
        )
    )
    items = await diagnostics(client, uri, lambda items: not with_code(items, "FG102"))
    assert not with_code(items, "FG102")
