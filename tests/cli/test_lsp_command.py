"""``fullgraph lsp`` starts the language server on stdio (the server's own tests cover it)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

HAS_SERVER = importlib.util.find_spec("fullgraph.lsp_server.server") is not None


def frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return f"Content-Length: {len(body)}\r\n\r\n".encode() + body


@pytest.mark.skipif(not HAS_SERVER, reason="fullgraph.lsp_server.server is not built yet")
def test_lsp_command_answers_initialize(tmp_path):
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}},
        },
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "shutdown"},
        {"jsonrpc": "2.0", "method": "exit"},
    ]
    completed = subprocess.run(
        [sys.executable, "-m", "fullgraph.lsp_server.cli", "lsp"],
        input=b"".join(frame(m) for m in messages),
        capture_output=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert b'"capabilities"' in completed.stdout, completed.stderr.decode()[-2000:]
    assert b'"id": 2' in completed.stdout or b'"id":2' in completed.stdout
