"""The server keeps stdout for the protocol: stray output of any origin goes to stderr."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = r"""
import os, subprocess, sys
from fullgraph.lsp_server.server.main import _claim_stdio

protocol_in, protocol_out = _claim_stdio()
print("print() after the claim")
sys.stdout.write("sys.stdout.write\n")
os.write(1, b"raw write to fd 1\n")
subprocess.run([sys.executable, "-c", "print('child process output')"], check=True)
protocol_out.write(b"PROTOCOL BYTES")
protocol_out.flush()
print("stdin is empty:", repr(sys.stdin.read()), flush=True)
print("protocol stdin:", protocol_in.read().decode(), flush=True)
"""


def test_everything_but_the_protocol_writer_lands_on_stderr():
    completed = subprocess.run(
        [sys.executable, "-c", SCRIPT], input=b"CLIENT BYTES", capture_output=True, timeout=60
    )
    assert completed.returncode == 0, completed.stderr.decode()
    assert completed.stdout == b"PROTOCOL BYTES"
    stderr = completed.stderr.decode()
    for line in (
        "print() after the claim",
        "sys.stdout.write",
        "raw write to fd 1",
        "child process output",
        "stdin is empty: ''",
        "protocol stdin: CLIENT BYTES",
    ):
        assert line in stderr


def _frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _read_frames(data: bytes) -> list[dict]:
    """Parse the byte stream strictly: anything but framed JSON-RPC is an error."""
    frames = []
    while data:
        header, separator, rest = data.partition(b"\r\n\r\n")
        fields = dict(line.split(b": ", 1) for line in header.split(b"\r\n") if b": " in line)
        assert separator and header.startswith(b"Content-Length: "), (
            f"stray bytes on stdout: {data[:80]!r}"
        )
        assert len(fields) == header.count(b"\r\n") + 1, f"malformed header: {header!r}"
        length = int(fields[b"Content-Length"])
        frames.append(json.loads(rest[:length]))
        data = rest[length:]
    return frames


@pytest.mark.parametrize(
    "command",
    [
        [sys.executable, "-m", "fullgraph.lsp_server"],
        [str(Path(sys.executable).with_name("fullgraph")), "lsp"],
    ],
    ids=["python -m fullgraph.lsp_server", "fullgraph lsp"],
)
def test_stdout_carries_nothing_but_framed_messages(command, tmp_path):
    if not Path(command[0]).exists():
        pytest.skip(f"{command[0]} is not installed")
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}},
        },
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": None},
        {"jsonrpc": "2.0", "method": "exit", "params": None},
    ]
    completed = subprocess.run(
        command,
        input=b"".join(_frame(m) for m in messages),
        capture_output=True,
        timeout=120,
        cwd=tmp_path,
    )
    frames = _read_frames(completed.stdout)
    (initialized,) = [frame for frame in frames if frame.get("id") == 1]
    capabilities = initialized["result"]["capabilities"]
    assert set(capabilities["executeCommandProvider"]["commands"]) == {
        "fullgraph.addEntrypoint",
        "fullgraph.analyze",
        "fullgraph.compileFunction",
    }
    assert capabilities["positionEncoding"] == "utf-16"
    assert capabilities["codeActionProvider"]["codeActionKinds"] == [
        "quickfix",
        "source.fixAll.fullgraph",
    ]
    assert completed.returncode == 0, completed.stderr.decode()
