"""The fullgraph language server (``python -m fullgraph.lsp_server``).

:mod:`.main` builds the server and registers every feature of
:mod:`.features` on it; :mod:`.language_server` is the pygls server with the
state the features share, typed in :mod:`.state`; :mod:`.registry` is how a
feature module marks its handlers without importing the server.
"""
