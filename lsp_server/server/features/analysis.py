"""Long-running work for the commands: analyses and wrapper generation.

Everything here runs the analysis service in a worker thread (the service in
turn runs user code in its worker process), reports ``window/workDoneProgress``
when the client supports it, and is cancellable two ways: the progress
notification's cancel button, and ``$/cancelRequest`` for the command that
started it.  Both set the ``threading.Event`` the service watches.  A failure
of the user's program is a result (shown once as a diagnostic and a message);
a failure of fullgraph itself is logged and shown, and the server goes on.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import traceback
import uuid
from typing import Any

from lsprotocol import types

from fullgraph.lsp_server.analysis.service import AnalysisFailed, AnalysisService
from fullgraph.lsp_server.server.features.diagnostics import publish_runtime
from fullgraph.lsp_server.server.features.runtime import entry_result
from fullgraph.lsp_server.server.language_server import FullgraphServer
from fullgraph.lsp_server.server.state import EntryResult

log = logging.getLogger(__name__)


class WorkProgress:
    """A server-initiated progress bar whose cancel button sets :attr:`cancel`."""

    def __init__(self, server: FullgraphServer, title: str, cancel: threading.Event | None = None):
        self.server = server
        self.title = title
        self.cancel = cancel or threading.Event()
        self.token: str | None = None

    async def __aenter__(self) -> WorkProgress:
        if not self.server.supports_work_done_progress:
            return self
        token = f"fullgraph/{uuid.uuid4()}"
        progress = self.server.work_done_progress
        try:
            await progress.create_async(token)
        except Exception:  # the client refused: work on without a progress bar
            log.info("client refused progress token:\n%s", traceback.format_exc())
            return self
        self.token = token
        future = progress.tokens.get(token)
        if future is not None:
            future.add_done_callback(lambda done: self.cancel.set() if done.cancelled() else None)
        progress.begin(
            token, types.WorkDoneProgressBegin(title=self.title, cancellable=True, percentage=0)
        )
        return self

    def report(self, message: str, percentage: int | None = None) -> None:
        if self.token is not None:
            self.server.work_done_progress.report(
                self.token, types.WorkDoneProgressReport(message=message, percentage=percentage)
            )

    async def __aexit__(self, *exc_info: object) -> None:
        if self.token is not None:
            message = "cancelled" if self.cancel.is_set() else self.title + " done"
            self.server.work_done_progress.end(
                self.token, types.WorkDoneProgressEnd(message=message)
            )
            self.server.work_done_progress.tokens.pop(self.token, None)


async def in_thread(
    server: FullgraphServer, cancel: threading.Event, function: Any, *args: Any
) -> Any:
    """Run blocking ``function`` in the pool; a cancelled request sets ``cancel``."""
    loop = asyncio.get_running_loop()
    try:
        return await loop.run_in_executor(server.thread_pool, function, *args)
    except asyncio.CancelledError:
        cancel.set()
        raise


def _tool_error(server: FullgraphServer, what: str) -> None:
    log.error("%s failed:\n%s", what, traceback.format_exc())
    server.show(
        f"fullgraph: {what} failed because of an internal error; see the server log",
        types.MessageType.Error,
    )


ANALYSIS_FINISHED = "fullgraph/analysisFinished"
RUNTIME_OFF = (
    "fullgraph: runtime analysis is off (diagnostics.runtime = false, e.g. in an untrusted "
    "workspace): it would run the project's code"
)


def store(server: FullgraphServer, result: EntryResult) -> None:
    """Remember an entry's result, refresh every file it touches, and announce it.

    ``fullgraph/analysisFinished`` ({entry, graphs, breaks, status}) lets a
    client show the last analysis (the VS Code status item) without parsing
    diagnostics.
    """
    previous = server.entry_results.get(result.entry)
    paths = {finding.path for finding in result.findings}
    if previous is not None:
        paths |= {finding.path for finding in previous.findings}
    server.entry_results[result.entry] = result
    publish_runtime(server, paths)
    # Lenses follow analyses ("Analyze" on a forward reached from an entrypoint).
    if server.capability("workspace", "code_lens", "refresh_support"):
        server.workspace_code_lens_refresh(None)
    report = result.report or {}
    server.protocol.notify(
        ANALYSIS_FINISHED,
        {
            "entry": result.entry,
            "graphs": int(report.get("graph_count") or 0),
            "breaks": int(report.get("break_count") or 0),
            "status": result.status,
        },
    )


def runtime_allowed(server: FullgraphServer) -> bool:
    """Whether user code may run; tells the user when it may not."""
    if not server.settings.diagnostics_runtime:
        server.show(RUNTIME_OFF, types.MessageType.Info)
        return False
    return True


async def analyze_entries(
    server: FullgraphServer, entries: list[str], cancel: threading.Event | None = None
) -> list[EntryResult]:
    """Analyse ``entries`` one after another with progress; returns their results."""
    if not entries or not runtime_allowed(server):
        return []
    cancel = cancel or threading.Event()
    try:
        service = await in_thread(server, cancel, server.service)
    except asyncio.CancelledError:
        raise
    except Exception:
        _tool_error(server, "starting the analysis service")
        return []
    results: list[EntryResult] = []
    async with server.analysis_lock:
        async with WorkProgress(server, "fullgraph: analysing entrypoints", cancel) as progress:
            for index, entry in enumerate(entries):
                if cancel.is_set():
                    break
                progress.report(entry, percentage=int(100 * index / len(entries)))
                try:
                    raw = await in_thread(
                        server, cancel, service.analyze, entry, server.settings.timeout, cancel
                    )
                    result = entry_result(raw, server.root, server.settings.break_severity)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    _tool_error(server, f"analysing {entry}")
                    continue
                store(server, result)
                results.append(result)
                if result.status == "cancelled":
                    server.show(f"fullgraph: analysis of {entry} cancelled", types.MessageType.Info)
                elif result.status != "ok":
                    detail = (result.error or {}).get("message") or ""
                    server.show(
                        f"fullgraph: {result.summary}" + (f": {detail}" if detail else ""),
                        types.MessageType.Error,
                    )
            progress.report(
                "; ".join(r.summary for r in results) or "nothing analysed", percentage=100
            )
    return results


async def compile_entry(
    server: FullgraphServer, entry: str, cancel: threading.Event | None = None
) -> str | None:
    """The generated wrapper source for ``entry``, or None (the user was told why)."""
    if not runtime_allowed(server):
        return None
    cancel = cancel or threading.Event()
    service = await in_thread(server, cancel, server.service)
    async with server.analysis_lock:
        async with WorkProgress(server, f"fullgraph: compiling {entry}", cancel):
            try:
                return await in_thread(
                    server, cancel, _compile, service, entry, server.settings.timeout, cancel
                )
            except asyncio.CancelledError:
                raise
            except AnalysisFailed as failure:
                result = entry_result(failure.result, server.root, server.settings.break_severity)
                store(server, result)
                server.show(
                    f"fullgraph: cannot compile {entry}: {failure}", types.MessageType.Error
                )
                return None
            except Exception:
                _tool_error(server, f"compiling {entry}")
                return None


def _compile(
    service: AnalysisService, entry: str, timeout: float | None, cancel: threading.Event
) -> str:
    return service.compile_wrapper(entry, timeout=timeout, cancel=cancel)
