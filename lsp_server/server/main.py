"""``python -m fullgraph.lsp_server`` / ``fullgraph lsp``: build the server and serve stdio.

:func:`build_server` is the one place that imports the features and
registers them (:mod:`.registry`) on a new
:class:`~.language_server.FullgraphServer`.

The protocol owns the process's real stdin and stdout.  :func:`main` moves
them to private descriptors and points file descriptors 0 and 1 at
``/dev/null`` and stderr, so a stray ``print`` (ours, a library's, or a
child process's that inherited fd 1) lands in the log instead of corrupting
the JSON-RPC stream.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import BinaryIO

from fullgraph.lsp_server.server.features import (
    code_actions,
    code_lens,
    commands,
    configuration,
    diagnostics,
    hover,
    notebook_cells,
    save,
)
from fullgraph.lsp_server.server.language_server import FullgraphServer
from fullgraph.lsp_server.server.registry import register

# Every module with LSP handlers; the others under features/ are their helpers.
FEATURES = (
    configuration,
    diagnostics,
    notebook_cells,
    save,
    hover,
    code_actions,
    code_lens,
    commands,
)


def build_server() -> FullgraphServer:
    """A language server with every feature registered."""
    server = FullgraphServer()
    register(server, FEATURES)
    return server


def _claim_stdio() -> tuple[BinaryIO, BinaryIO]:
    """Take the real stdin/stdout for the protocol; leave harmless stand-ins behind.

    After this, file descriptor 1 is a copy of stderr and descriptor 0 reads
    /dev/null, for this process and every child it starts.
    """
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    protocol_in = os.fdopen(os.dup(sys.stdin.fileno()), "rb")
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), 1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdout = sys.stderr
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - lives as long as the process
    return protocol_in, protocol_out


def main(argv: list[str] | None = None) -> int:
    """Serve LSP over stdio (``python -m fullgraph.lsp_server``, ``fullgraph lsp``)."""
    parser = argparse.ArgumentParser(
        prog="fullgraph lsp", description="serve the fullgraph language server over stdio"
    )
    parser.add_argument("--log-level", default=os.environ.get("FULLGRAPH_LSP_LOG", "WARNING"))
    # `fullgraph lsp` may hand over its own leftover arguments; ignore what isn't ours.
    options, _ = parser.parse_known_args(argv or [])
    logging.basicConfig(
        stream=sys.stderr,
        level=options.log_level.upper(),
        format="fullgraph-lsp %(levelname)s %(name)s: %(message)s",
    )
    protocol_in, protocol_out = _claim_stdio()
    server = build_server()
    server.start_io(protocol_in, protocol_out)
    server.close_service()
    return 0
