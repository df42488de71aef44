"""The analysis service and its worker: where entrypoints run, isolated.

:mod:`.service` is the API the CLI and the language server call
(``AnalysisService``); it drives a warm worker process through
:mod:`.worker_process`.  :mod:`.worker` is that process, the only place where
user code runs; :mod:`.tracebacks` trims fullgraph's frames from what it
reports.
"""
