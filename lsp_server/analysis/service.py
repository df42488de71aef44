"""The analysis service: one API for the CLI and the language server.

``AnalysisService(root, config)`` runs entrypoints in a warm worker process
(:mod:`fullgraph.lsp_server.analysis.worker`) and static rules in-process.  Policy lives
here: a per-entrypoint timeout, cancellation through a ``threading.Event``, a
memory cap handed to the worker, and a fresh worker whenever the old one died,
was stopped, or the project's ``.py`` files changed since it started (it has
imported the old code).  Whatever user code does, ``analyze`` returns an
:class:`AnalysisResult`; only a bug in fullgraph raises.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fullgraph.lsp_server.analysis.worker_process import (
    WaitCancelled,
    WaitTimeout,
    WorkerGone,
    WorkerProcess,
)
from fullgraph.lsp_server.config import Config
from fullgraph.lsp_server.entrypoints import parse_entrypoint
from fullgraph.lsp_server.errors import ConfigError
from fullgraph.lsp_server.ipynb import lint_notebook_file
from fullgraph.lsp_server.sources import SOURCE_SUFFIXES, iter_python_files, snapshot_mtimes
from fullgraph.lsp_server.workspace_calls import WorkspaceCalls

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self is 3.11+; this is not imported at run time

STATUSES = ("ok", "user_exception", "timeout", "crashed", "cancelled", "config_error")
# Starting a worker imports torch; that is not the entrypoint's time.
DEFAULT_STARTUP_TIMEOUT_S = 180.0
# Captured user output kept per stream (head and tail); the rest is elided.
DEFAULT_MAX_OUTPUT_BYTES = 256 * 1024


@dataclasses.dataclass
class AnalysisResult:
    entry: str
    status: str  # one of STATUSES
    report: dict[str, Any] | None = None  # docs/report-schema.md
    error: dict[str, Any] | None = None  # {type, message, traceback}
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0
    wrapper: str | None = None  # generated module source (compile_wrapper only)
    # {"file", "qualname"} of the functions the analysis ran (its own and every
    # submodule's forward), for "Analyze" on a function that is not an entrypoint.
    reached: list[dict[str, str]] = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data.pop("wrapper")
        data.pop("reached")  # for the editor's "Analyze"; not part of check --json
        return data


class AnalysisFailed(Exception):
    """``compile_wrapper`` could not produce a module; ``result`` says why."""

    def __init__(self, result: AnalysisResult):
        error = result.error or {}
        super().__init__(f"{result.entry}: {result.status}: {error.get('message', '')}")
        self.result = result


_CANCELLED_ERROR = {"type": "Cancelled", "message": "analysis cancelled", "traceback": ""}


@contextlib.contextmanager
def _output_files() -> Iterator[tuple[Path, Path]]:
    """Empty files for one request's stdout and stderr, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="fullgraph-run-") as folder:
        stdout_path, stderr_path = Path(folder) / "stdout", Path(folder) / "stderr"
        stdout_path.touch()
        stderr_path.touch()
        yield stdout_path, stderr_path


def _read_output(path: Path, limit: int) -> str:
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            if size <= limit:
                data = handle.read()
            else:
                half = limit // 2
                head = handle.read(half)
                handle.seek(size - half)
                tail = handle.read()
                note = f"\n[... {size - 2 * half} bytes of output omitted ...]\n".encode()
                data = head + note + tail
    except OSError:
        return ""
    return data.decode("utf-8", errors="replace")


class AnalysisService:
    def __init__(
        self,
        root: Path,
        config: Config,
        *,
        python: str | None = None,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT_S,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
        env: dict[str, str] | None = None,
        restart_eagerly: bool = True,
    ):
        self.root = Path(root).resolve()
        self.config = config
        self.python = python or config.python or sys.executable
        self.startup_timeout = startup_timeout
        self.max_output_bytes = max_output_bytes
        self.env = env
        # Start a replacement worker as soon as one is stopped (editors: yes;
        # a one-shot CLI run would only waste the start-up).
        self.restart_eagerly = restart_eagerly
        self._worker: WorkerProcess | None = None
        self._worker_snapshot: dict[str, tuple[int, int]] = {}
        self._lock = threading.Lock()  # one request at a time per worker
        self._closed = False
        self.workers_started = 0  # for tests and the status bar: how often we paid start-up
        self._calls = WorkspaceCalls(self.root)  # cross-file calls into compiled code

    # -- public API ---------------------------------------------------------

    def analyze(
        self,
        entry: str,
        timeout: float | None = None,
        cancel: threading.Event | None = None,
        *,
        key: str = "entry",
    ) -> AnalysisResult:
        """Run ``fullgraph.runtime.explain`` on one entrypoint, isolated.

        ``key`` names where the entrypoint came from in configuration errors
        (for example ``tool.fullgraph.entrypoints[0]`` or ``--entry``).
        """
        return self._run("analyze", entry, timeout, cancel, key)

    def compile_wrapper(
        self,
        entry: str,
        timeout: float | None = None,
        cancel: threading.Event | None = None,
        *,
        key: str = "entry",
    ) -> str:
        """Source of the generated compiled wrapper module for ``entry``."""
        result = self._run("compile_wrapper", entry, timeout, cancel, key)
        if not result.ok or result.wrapper is None:
            raise AnalysisFailed(result)
        return result.wrapper

    def check_static(
        self, paths: list[Path], errors: dict[Path, Exception] | None = None
    ) -> dict[Path, list[Any]]:
        """Static rules on the ``.py`` and ``.ipynb`` files under ``paths`` (in-process).

        Every checked file is a key (an empty list means clean).  Files that do
        not parse are left out and, when ``errors`` is given, recorded there; a
        notebook's findings are :class:`.notebooks.CellFinding` values, and a
        notebook with cells that do not parse keeps the findings of the others.
        """
        try:
            from fullgraph.refactors import SourceSyntaxError, lint_source, workspace_entrypoints
        except ImportError:
            return {}
        findings: dict[Path, list[Any]] = {}
        files = list(iter_python_files(paths, SOURCE_SUFFIXES))
        # Functions a compiled function of another file of the workspace calls are compiled too.
        called = self._calls.of(files, workspace_entrypoints)
        for path in files:
            try:
                source = path.read_text(encoding="utf-8")
                if path.suffix == ".ipynb":
                    findings[path] = lint_notebook_file(source, str(path), errors, path)
                    continue
                entrypoints = called.get(path.resolve(), {})
                findings[path] = list(lint_source(source, str(path), entrypoints=entrypoints))
            except (SourceSyntaxError, UnicodeDecodeError, OSError) as exc:
                if errors is not None:
                    errors[path] = exc
        return findings

    def warm_up(self) -> None:
        """Start a worker now (without waiting) so the next analysis finds it ready."""
        with self._lock:
            if not self._closed:
                self._ensure_worker_started()

    def close(self) -> None:
        """Stop the worker now, even mid-analysis (that analysis ends as cancelled)."""
        self._closed = True
        worker = self._worker
        if worker is not None:
            worker.kill()  # thread-safe; the analysis thread sees the worker gone

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- running one request ------------------------------------------------

    def _run(
        self,
        op: str,
        entry: str,
        timeout: float | None,
        cancel: threading.Event | None,
        key: str,
    ) -> AnalysisResult:
        started = time.monotonic()
        if self._closed:
            raise RuntimeError("AnalysisService is closed")
        try:
            parse_entrypoint(entry, key=key)
        except ConfigError as exc:
            return AnalysisResult(entry=str(entry), status="config_error", error=exc.to_json())
        if not self._acquire(cancel):
            return self._cancelled(entry, started)
        if cancel is not None and cancel.is_set():  # cancelled while queued: start nothing
            self._lock.release()
            return self._cancelled(entry, started)
        try:
            return self._run_locked(op, entry, key, timeout or self.config.timeout, cancel, started)
        finally:
            self._lock.release()

    def _acquire(self, cancel: threading.Event | None) -> bool:
        while not self._lock.acquire(timeout=0.05):
            if cancel is not None and cancel.is_set():
                return False
        return True

    def _run_locked(
        self,
        op: str,
        entry: str,
        key: str,
        timeout: float,
        cancel: threading.Event | None,
        started: float,
    ) -> AnalysisResult:
        if self._closed:  # close() came while this call waited for its turn
            return self._cancelled(entry, started)
        if self._worker is not None and self._sources_changed():
            self._stop_worker()
        worker_or_failure = self._ready_worker(entry, cancel, started)
        if isinstance(worker_or_failure, AnalysisResult):
            return worker_or_failure
        worker = worker_or_failure

        with _output_files() as (stdout_path, stderr_path):
            request = {
                "op": op,
                "entry": entry,
                "key": key,
                "stdout_path": str(stdout_path),
                "stderr_path": str(stderr_path),
            }
            answer, status, error = self._send(worker, request, entry, timeout, cancel)
            stdout = _read_output(stdout_path, self.max_output_bytes)
            stderr = _read_output(stderr_path, self.max_output_bytes)
        if answer is None:
            # The worker is hung, dead or was interrupted mid-request: replace it,
            # starting the next one now so that its torch import overlaps idle time.
            self._stop_worker()
            if self.restart_eagerly and not self._closed:
                self._ensure_worker_started()
            if status == "crashed":
                error["traceback"] = stderr[-8192:]  # faulthandler's dump, if any
        return AnalysisResult(
            entry=entry,
            status=status if status in STATUSES else "crashed",
            report=answer.get("report") if answer else None,
            error=error,
            stdout=stdout,
            stderr=stderr,
            duration_s=time.monotonic() - started,
            wrapper=answer.get("wrapper") if answer else None,
            reached=list(answer.get("reached") or []) if answer else [],
        )

    def _ready_worker(
        self, entry: str, cancel: threading.Event | None, started: float
    ) -> WorkerProcess | AnalysisResult:
        """A worker that has finished starting, or the result saying why there is none."""
        try:
            worker = self._ensure_worker_started()
        except OSError as exc:
            error = ConfigError(
                "python", self.python, f"an executable Python interpreter with fullgraph ({exc})"
            )
            return AnalysisResult(entry=entry, status="config_error", error=error.to_json())
        try:
            worker.wait_ready(time.monotonic() + self.startup_timeout, cancel)
        except WaitCancelled:
            return self._cancelled(entry, started)
        except (WaitTimeout, WorkerGone) as exc:
            if self._closed:  # close() stopped the starting worker from another thread
                return self._cancelled(entry, started)
            log = worker.log_tail()
            self._stop_worker()
            if isinstance(exc, WorkerGone):
                reason = exc.description
            else:
                reason = f"the worker did not start within {self.startup_timeout:g} s"
            return AnalysisResult(
                entry=entry,
                status="crashed",
                error={
                    "type": "WorkerStartError",
                    "message": f"could not start the analysis worker with {self.python}: {reason}",
                    "traceback": log,
                },
                stderr=log,
                duration_s=time.monotonic() - started,
            )
        return worker

    def _send(
        self,
        worker: WorkerProcess,
        request: dict[str, Any],
        entry: str,
        timeout: float,
        cancel: threading.Event | None,
    ) -> tuple[dict[str, Any] | None, str, dict[str, Any]]:
        """(answer or None, status, error) of one request, whatever happens to the worker."""
        try:
            answer = worker.request(request, time.monotonic() + timeout, cancel)
        except WaitTimeout:
            message = (
                f"{entry} did not finish within {timeout:g} s; its worker was stopped "
                "(raise [tool.fullgraph] timeout if it needs longer)"
            )
            return None, "timeout", {"type": "Timeout", "message": message, "traceback": ""}
        except WaitCancelled:
            return None, "cancelled", dict(_CANCELLED_ERROR)
        except WorkerGone as exc:
            if self._closed:  # close() stopped it from another thread
                return None, "cancelled", dict(_CANCELLED_ERROR)
            message = f"{exc.description} while running {entry}"
            return None, "crashed", {"type": "WorkerCrashed", "message": message, "traceback": ""}
        return answer, answer.get("status", "crashed"), answer.get("error")

    def _cancelled(self, entry: str, started: float) -> AnalysisResult:
        return AnalysisResult(
            entry=entry,
            status="cancelled",
            error=dict(_CANCELLED_ERROR),
            duration_s=time.monotonic() - started,
        )

    # -- worker lifecycle ---------------------------------------------------

    def _ensure_worker_started(self) -> WorkerProcess:
        if self._worker is not None and self._worker.alive():
            return self._worker
        self._stop_worker()
        # Snapshot before the start: an edit made while it imports is caught next time.
        self._worker_snapshot = snapshot_mtimes(self.root)
        env = dict(os.environ if self.env is None else self.env)
        self._worker = WorkerProcess(
            self.python, self.root, memory_mb=self.config.memory_mb, env=env
        )
        self.workers_started += 1
        return self._worker

    def _stop_worker(self) -> None:
        if self._worker is not None:
            self._worker.kill()
            self._worker = None

    def _sources_changed(self) -> bool:
        return snapshot_mtimes(self.root) != self._worker_snapshot
