"""The server's LSP features; :mod:`fullgraph.lsp_server.server.main` registers them.

Handler modules (their functions are marked with
:func:`~fullgraph.lsp_server.server.registry.feature` or ``command``):
configuration, diagnostics, notebook_cells, save, hover, code_actions,
code_lens, commands.  Helper modules with no LSP registration: linting and
notebook_lint (the static rules on a document), findings (diagnostics as LSP
shows them), runtime (analysis results as diagnostics), analysis (running
entrypoints with progress), edits (workspace edits).
"""
