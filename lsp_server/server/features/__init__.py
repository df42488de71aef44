"""The server's LSP features, one module each; importing this package registers them all.

Handler modules: configuration, diagnostics, notebook_cells, save, hover,
code_actions, code_lens, commands.  Helper modules with no LSP registration: findings,
runtime, analysis (source locations: :mod:`fullgraph.lsp_server.locations`).
"""

from fullgraph.lsp_server.features import (  # noqa: F401 - imported for registration
    code_actions,
    code_lens,
    commands,
    configuration,
    diagnostics,
    hover,
    notebook_cells,
    save,
)
