"""Configuration: settings from initialization options, the client, and pyproject.toml.

The client's settings arrive three ways — ``initializationOptions`` at start,
the ``settings`` of ``workspace/didChangeConfiguration``, or (when that
notification carries none, as vscode-languageclient sends it) an answer to
``workspace/configuration`` for the ``fullgraph`` section.  Each time, the
server re-merges them over ``[tool.fullgraph]`` (see :mod:`fullgraph.lsp_server.settings`).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from lsprotocol import types
from pygls.uris import to_fs_path

from fullgraph.lsp_server.server.features import notebook_cells
from fullgraph.lsp_server.server.features.diagnostics import lint_and_publish
from fullgraph.lsp_server.server.language_server import FullgraphServer
from fullgraph.lsp_server.server.registry import feature

log = logging.getLogger(__name__)


def workspace_root(params: types.InitializeParams) -> Path:
    """The first workspace folder, else rootUri/rootPath, else the working directory."""
    candidates = [folder.uri for folder in params.workspace_folders or []] + [params.root_uri]
    for uri in candidates:
        if uri:
            path = to_fs_path(uri)
            if path:
                return Path(path).resolve()
    return Path(params.root_path).resolve() if params.root_path else Path.cwd().resolve()


async def pull_client_settings(server: FullgraphServer) -> None:
    """Ask the client for its ``fullgraph`` section (workspace/configuration)."""
    if not server.capability("workspace", "configuration"):
        return
    try:
        answer = await server.workspace_configuration_async(
            types.ConfigurationParams(items=[types.ConfigurationItem(section="fullgraph")])
        )
    except Exception:
        log.info("client did not answer workspace/configuration", exc_info=True)
        return
    if answer and isinstance(answer[0], dict):
        server.reload_settings(answer[0], from_client=True)


@feature(types.INITIALIZE)
def initialize(server: FullgraphServer, params: types.InitializeParams) -> None:
    """Find the workspace root and read the initial settings."""
    server.loop = asyncio.get_running_loop()
    server.root = workspace_root(params)
    server.reload_settings(params.initialization_options, from_client=True)


@feature(types.INITIALIZED)
async def initialized(server: FullgraphServer, params: types.InitializedParams) -> None:
    """Fetch client settings the initialization options did not carry."""
    if server.client_settings is None:
        await pull_client_settings(server)


@feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def did_change_configuration(
    server: FullgraphServer, params: types.DidChangeConfigurationParams
) -> None:
    """Re-read settings and refresh every open document's diagnostics."""
    if params.settings:
        server.reload_settings(params.settings, from_client=True)
    else:
        await pull_client_settings(server)
    server.documents.clear()  # rule selection may have changed
    server.notebooks.clear()
    for notebook_uri in list(server.workspace.notebook_documents):
        await notebook_cells.lint_and_publish(server, notebook_uri)
    for uri in list(server.workspace.text_documents):
        if server.workspace.get_notebook_document(cell_uri=uri) is None:  # cells: just done
            await lint_and_publish(server, uri)
    if server.supports_pull_diagnostics and server.supports_diagnostic_refresh:
        server.workspace_diagnostic_refresh(None)


@feature(types.SHUTDOWN)
def shutdown(server: FullgraphServer, params: None) -> None:
    """Stop the analysis worker before the client asks us to exit."""
    server.close_service()
