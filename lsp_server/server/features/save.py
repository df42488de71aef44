"""On save: reload settings when pyproject.toml changes, analyse entrypoints after Python saves.

Analyses run in the background (a save is a notification; nothing waits for
it).  Saves that arrive while an analysis runs fold into one more run after
it, so a burst of saves costs at most two analyses.
"""

from __future__ import annotations

import asyncio
import logging

from fullgraph.lsp_server.features.analysis import analyze_entries
from fullgraph.lsp_server.server import SERVER, FullgraphServer
from lsprotocol import types

log = logging.getLogger(__name__)


class SaveAnalyses:
    """At most one background analysis of the entrypoints, plus one queued rerun."""

    def __init__(self) -> None:
        self.task: asyncio.Task | None = None
        self.again = False

    def request(self, server: FullgraphServer) -> None:
        if self.task is not None and not self.task.done():
            self.again = True
            return
        self.task = asyncio.ensure_future(self._run(server))

    async def _run(self, server: FullgraphServer) -> None:
        while True:
            self.again = False
            try:
                await analyze_entries(server, list(server.settings.entrypoints))
            except Exception:
                log.exception("analysis after save failed")
            if not self.again:
                return


SAVE_ANALYSES = SaveAnalyses()


@SERVER.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
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
        SAVE_ANALYSES.request(server)
