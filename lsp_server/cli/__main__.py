"""``python -m fullgraph.lsp_server.cli``: the ``fullgraph`` command line."""

import sys

from fullgraph.lsp_server.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
