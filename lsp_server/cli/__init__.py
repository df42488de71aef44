"""The ``fullgraph`` command line: check, explain, fix, compile, lsp (:mod:`.main`).

:mod:`.check_run` holds one check's results as data; :mod:`.text_report`,
:mod:`.sarif` and ``--json`` print them; :mod:`.demo` is ``make demo``.
"""
