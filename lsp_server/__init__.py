"""fullgraph's front ends: the language server, the CLI and the analysis service.

Three applications, one subpackage each: :mod:`.server` (the language
server), :mod:`.cli` (the ``fullgraph`` command) and :mod:`.analysis` (the
service that runs entrypoints in a worker process).  The modules at this level
are what they share: settings and configuration, entrypoints, the diagnostic
model, positions and locations, suppressions, notebooks, break sites and
hints.  They import nothing from the three subpackages (docs/architecture.md).
"""
