"""Shared fixtures for the language-server tests: a workspace copy and a real client.

Every end-to-end test starts ``python -m fullgraph.lsp_server`` as a
subprocess and talks LSP to it over stdio with pytest-lsp's client, so a byte
the server writes to stdout outside the protocol fails the test.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import pytest_lsp
from lsp_helpers import SERVER_COMMAND, WORKSPACE, initialize_params, server_env
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A private copy of tests/lsp/workspace (tests may edit it)."""
    root = tmp_path / "workspace"
    shutil.copytree(WORKSPACE, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=SERVER_COMMAND, server_env=server_env()),
    params=["neovim@v0.7.0", "neovim@v0.11.0"],
)
async def client(lsp_client: LanguageClient, workspace: Path, request):
    """A started server, initialized on the workspace copy, as an old and a new Neovim.

    Neovim 0.7 negotiates UTF-16 and gets pushed diagnostics; 0.11 negotiates
    UTF-8 and pulls them.
    """
    capabilities = pytest_lsp.client_capabilities(request.param)
    await lsp_client.initialize_session(initialize_params(workspace, capabilities))
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=SERVER_COMMAND, server_env=server_env())
)
async def push_client(lsp_client: LanguageClient, workspace: Path):
    """One server as Neovim 0.7 (UTF-16, pushed diagnostics) that records applied edits."""
    lsp_client.applied_edits = []
    lsp_client.finished_analyses = []

    @lsp_client.feature("fullgraph/analysisFinished")
    def analysis_finished(ls: LanguageClient, params):
        ls.finished_analyses.append(params)

    @lsp_client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(ls: LanguageClient, params: types.ApplyWorkspaceEditParams):
        ls.applied_edits.append(params)
        return types.ApplyWorkspaceEditResult(applied=True)

    capabilities = pytest_lsp.client_capabilities("neovim@v0.7.0")
    await lsp_client.initialize_session(initialize_params(workspace, capabilities))
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=SERVER_COMMAND, server_env=server_env())
)
async def misconfigured_client(lsp_client: LanguageClient, workspace: Path):
    """A server started with bad initialization options (it must say so and go on)."""
    capabilities = pytest_lsp.client_capabilities("neovim@v0.7.0")
    options = {"debounceMs": "fast", "timeout": -5, "ignore": "FG102", "runOnSafe": False}
    await lsp_client.initialize_session(initialize_params(workspace, capabilities, options))
    yield
    await lsp_client.shutdown_session()
