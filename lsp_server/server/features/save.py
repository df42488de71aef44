"""On save: reload settings when pyproject.toml changes, analyse entrypoints after Python saves.

Analyses run in the background (a save is a notification; nothing waits for
it), queued on the server's
:class:`~fullgraph.lsp_server.server.state.SaveAnalyses`: a burst of saves
costs at most two analyses.
"""

from __future__ import annotations

from lsprotocol import types

from fullgraph.lsp_server.server.features.analysis import analyze_entries
from fullgraph.lsp_server.server.language_server import FullgraphServer
from fullgraph.lsp_server.server.registry import feature


@feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
def did_save(server: FullgraphServer, params: types.DidSaveTextDocumentParams) -> None:
    """Reload settings or analyse the configured entrypoints after a save."""
    uri = params.text_document.uri
    if uri.endswith("/pyproject.toml"):
        server.reload_settings()
        return
    settings = server.settings
    if (
        uri.endswith(".py")
        and settings.run_on_save
        and settings.diagnostics_runtime
        and settings.entrypoints
    ):
        server.save_analyses.request(
            lambda: analyze_entries(server, list(server.settings.entrypoints))
        )
