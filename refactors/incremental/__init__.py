"""Linting a document again after an edit, re-running the rules only where it reaches.

:class:`~.linter.IncrementalLinter` (the language server keeps one per open
document) cuts the file into top-level chunks (:mod:`.chunking`, with the names
each binds and uses from :mod:`.chunk_names`), lints the chunks an edit reaches
in partial modules (:mod:`.partial`) and builds a fix from the whole file when
it is read (:mod:`.fixes`).  It builds on :mod:`fullgraph.refactors.engine`;
the engine never imports it.
"""
