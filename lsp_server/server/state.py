"""What the language server keeps between requests, typed.

Per open document a :class:`DocumentState` (its static findings and linter),
per open notebook a :class:`NotebookState` (the line map of its cells), per
analysed entrypoint an :class:`EntryResult` (its runtime findings), and the
:class:`SaveAnalyses` queue of analyses that saves start.  The server
(:class:`~.language_server.FullgraphServer`) holds them; the features read and
replace them.  Findings are the shared :class:`~fullgraph.lsp_server.diagnostic.Diagnostic`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from fullgraph.lsp_server import notebooks
from fullgraph.lsp_server.diagnostic import Diagnostic
from fullgraph.refactors import IncrementalLinter, SourceSyntaxError

log = logging.getLogger(__name__)

# Why a document's text did not parse: the rules' error, or a notebook cell's.
SyntaxProblem = SourceSyntaxError | notebooks.CellSyntaxError

FAILURE_TITLES = {
    "user_exception": "raised an exception",
    "timeout": "timed out",
    "crashed": "crashed",
    "cancelled": "was cancelled",
    "config_error": "is misconfigured",
}


@dataclasses.dataclass
class DocumentState:
    """Static results of one open document (a file, or a notebook cell)."""

    text: str | None = None  # the text `findings` belong to
    findings: list[Diagnostic] = dataclasses.field(default_factory=list)
    # Why `text` did not parse (a cell's error in a notebook), else None.
    syntax_error: SyntaxProblem | None = None
    good_text: str | None = None  # the last text that parsed, and its findings
    good_findings: list[Diagnostic] = dataclasses.field(default_factory=list)
    # The document's incremental linter, with its per-chunk cache (files only).
    linter: IncrementalLinter | None = None


@dataclasses.dataclass
class NotebookState:
    """The static results of one open notebook, for the cell texts in ``key``."""

    key: tuple = ()  # ((cell uri, kind, text), ...) the results belong to
    combined: notebooks.CombinedSource | None = None
    cell_uris: tuple[str, ...] = ()  # cell index -> its document URI


@dataclasses.dataclass
class EntryResult:
    """The server's memory of one entrypoint's last analysis."""

    entry: str
    status: str
    report: dict[str, Any] | None
    error: dict[str, Any] | None
    findings: list[Diagnostic]
    # The text each file had when it was analysed, to carry findings over edits.
    texts: dict[Path, str]
    duration_s: float = 0.0
    # (file, qualname) of every function the analysis ran: its own, each
    # submodule's forward, and the frames of its breaks.
    reached: frozenset[tuple[Path, str]] = frozenset()

    def reaches(self, path: Path, qualname: str) -> bool:
        """Whether the analysis ran function ``qualname`` of ``path`` (or, for a class, a method)."""
        return any(
            file == path and (name == qualname or name.startswith(qualname + "."))
            for file, name in self.reached
        )

    @property
    def summary(self) -> str:
        if self.status != "ok":
            return f"{self.entry} {FAILURE_TITLES.get(self.status, self.status)}"
        report = self.report or {}
        return (
            f"{self.entry}: {report.get('graph_count', 0)} graph(s), "
            f"{report.get('break_count', 0)} break(s)"
        )


class SaveAnalyses:
    """At most one background analysis of the entrypoints, plus one queued rerun.

    Saves that arrive while an analysis runs fold into one more run after it,
    so a burst of saves costs at most two analyses.
    """

    def __init__(self) -> None:
        self.task: asyncio.Task | None = None
        self.again = False

    def request(self, run: Callable[[], Awaitable[object]]) -> None:
        if self.task is not None and not self.task.done():
            self.again = True
            return
        self.task = asyncio.ensure_future(self._run(run))

    async def _run(self, run: Callable[[], Awaitable[object]]) -> None:
        while True:
            self.again = False
            try:
                await run()
            except Exception:
                log.exception("analysis after save failed")
            if not self.again:
                return
