"""Helpers for the language-server tests (imported by conftest.py and the tests)."""

from __future__ import annotations

import asyncio
import importlib
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient

WORKSPACE = Path(__file__).parent / "workspace"
SERVER_COMMAND = [sys.executable, "-m", "fullgraph.lsp_server"]


def _has(module: str, *names: str) -> bool:
    try:
        loaded = importlib.import_module(module)
    except Exception:
        return False
    return all(hasattr(loaded, name) for name in names)


def _runtime_unavailable() -> str | None:
    """Why the runtime cannot run on this interpreter (the static-only 3.10 leg has no torch)."""
    try:
        runtime = importlib.import_module("fullgraph.runtime")
    except ImportError as exc:
        return f"the runtime cannot be imported here ({exc}); the static rules still run"
    try:
        runtime.check_supported()
    except runtime.UnsupportedPythonError as exc:
        return f"the runtime does not run on this interpreter: {exc}"
    return None


HAVE_REFACTORS = _has("fullgraph.refactors", "lint_source", "fix_source", "SourceSyntaxError")
RUNTIME_UNAVAILABLE = _runtime_unavailable()
HAVE_RUNTIME = (
    RUNTIME_UNAVAILABLE is None
    and _has("fullgraph.runtime", "explain")
    and _has("fullgraph.lsp_server.analysis.service", "AnalysisService")
)


needs_refactors = pytest.mark.skipif(
    not HAVE_REFACTORS, reason="fullgraph.refactors.lint_source is not built yet"
)
needs_runtime = pytest.mark.skipif(
    not HAVE_RUNTIME,
    reason=RUNTIME_UNAVAILABLE
    or "fullgraph.runtime.explain / the analysis service are not built yet",
)


def uri_of(path: Path) -> str:
    return from_fs_path(str(path))


def initialize_params(
    root: Path, capabilities: types.ClientCapabilities, options: dict | None = None
) -> types.InitializeParams:
    return types.InitializeParams(
        capabilities=capabilities,
        root_uri=uri_of(root),
        workspace_folders=[types.WorkspaceFolder(uri=uri_of(root), name="workspace")],
        initialization_options=options or {"debounceMs": 50},
    )


async def wait_until(
    condition: Callable[[], object], timeout: float = 30.0, what: str = "condition"
) -> object:
    """Poll ``condition`` until it is truthy; fail the test after ``timeout`` seconds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = condition()
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.05)


def open_document(
    client: LanguageClient, path: Path, text: str | None = None, version: int = 1
) -> str:
    uri = uri_of(path)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri,
                language_id="python",
                version=version,
                text=text if text is not None else path.read_text(),
            )
        )
    )
    return uri


def server_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault(
        "TORCHINDUCTOR_CACHE_DIR", str(Path(__file__).parents[2] / ".cache" / "inductor")
    )
    return env


def pulls(client: LanguageClient) -> bool:
    return client.capabilities.text_document.diagnostic is not None


def encoding(client: LanguageClient) -> str:
    general = client.capabilities.general
    return (general.position_encodings or ["utf-16"])[0] if general else "utf-16"


async def diagnostics(
    client: LanguageClient, uri: str, until=lambda items: True
) -> list[types.Diagnostic]:
    """The server's diagnostics for ``uri`` once ``until`` holds, pushed or pulled."""
    if pulls(client):

        async def pulled():
            report = await client.text_document_diagnostic_async(
                types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uri))
            )
            return report.items

        items = await pulled()
        for _ in range(100):
            if until(items):
                return items
            items = await pulled()
        raise AssertionError(f"pulled diagnostics never matched: {items}")
    await wait_until(
        lambda: uri in client.diagnostics and until(client.diagnostics[uri]), what="diagnostics"
    )
    return list(client.diagnostics[uri])


def with_code(items, code):
    return [item for item in items if item.code == code]
