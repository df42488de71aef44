"""``python -m fullgraph.lsp_server``: serve the fullgraph language server over stdio."""

import sys

from fullgraph.lsp_server.server.main import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
