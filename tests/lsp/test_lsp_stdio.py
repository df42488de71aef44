"""The server keeps stdout for the protocol: stray output of any origin goes to stderr."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = r"""
import os, subprocess, sys
from fullgraph.lsp_server.server import _claim_stdio

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
