"""The service's handle on one analysis worker process.

Spawns ``python -m fullgraph.lsp_server.analysis.worker`` with two private
pipes (requests in, answers out) and waits for answers without ever blocking
past a deadline or a cancellation: the wait polls the answer pipe in short
slices.  The worker is
the leader of its own process group, so killing it also stops any compiler
subprocesses user code started.  The worker's own stdout/stderr (outside a
request) go to a log file whose tail explains a start-up failure.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

# How often a wait wakes up to look at the cancel event and the deadline.
POLL_INTERVAL_S = 0.05


class WorkerGone(Exception):
    """The worker process exited; ``description`` says how."""

    def __init__(self, description: str):
        super().__init__(description)
        self.description = description


class WaitTimeout(Exception):
    pass


class WaitCancelled(Exception):
    pass


def describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "the worker stopped answering"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"the worker was killed by {name}"
    return f"the worker exited with code {returncode}"


class WorkerProcess:
    def __init__(self, python: str, root: Path, *, memory_mb: int, env: dict[str, str] | None):
        request_read, self._request_write = os.pipe()
        self._answer_read, answer_write = os.pipe()
        # Lives as long as the worker; closed (and deleted) by kill().
        self._log = tempfile.NamedTemporaryFile(prefix="fullgraph-worker-", suffix=".log")  # noqa: SIM115
        command = [
            python,
            "-m",
            "fullgraph.lsp_server.analysis.worker",
            "--request-fd",
            str(request_read),
            "--result-fd",
            str(answer_write),
            "--root",
            str(root),
            "--memory-mb",
            str(memory_mb),
        ]
        try:
            self.process = subprocess.Popen(
                command,
                cwd=root,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=self._log,
                pass_fds=(request_read, answer_write),
                start_new_session=True,
            )
        finally:
            os.close(request_read)
            os.close(answer_write)
        self._buffer = b""
        self.ready: dict[str, Any] | None = None
        self._closed = False
        self._lock = threading.Lock()
        self._receiving = False  # a thread is reading the answer pipe
        self._pipes_closed = False

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return not self._closed and self.process.poll() is None

    def wait_ready(self, deadline: float, cancel: threading.Event | None) -> dict[str, Any]:
        if self.ready is None:
            message = self._receive(deadline, cancel)
            if message.get("type") != "ready":
                raise WorkerGone(f"unexpected first message from the worker: {message!r}")
            self.ready = message
        return self.ready

    def request(
        self, message: dict[str, Any], deadline: float, cancel: threading.Event | None
    ) -> dict[str, Any]:
        data = (json.dumps(message) + "\n").encode("utf-8")
        try:
            os.write(self._request_write, data)
        except (BrokenPipeError, OSError):
            raise WorkerGone(describe_exit(self.process.wait())) from None
        return self._receive(deadline, cancel)

    def _receive(self, deadline: float, cancel: threading.Event | None) -> dict[str, Any]:
        # kill() from another thread must not close the pipe under this read (a closed,
        # or worse reused, descriptor): while a read is in progress it leaves the closing
        # to the reader, who sees the killed worker's end of file first.
        with self._lock:
            if self._closed:
                raise WorkerGone("the worker was stopped")
            self._receiving = True
        try:
            return self._receive_line(deadline, cancel)
        finally:
            with self._lock:
                self._receiving = False
                closing = self._closed
            if closing:
                self._close_pipes()

    def _receive_line(self, deadline: float, cancel: threading.Event | None) -> dict[str, Any]:
        while b"\n" not in self._buffer:
            if cancel is not None and cancel.is_set():
                raise WaitCancelled()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WaitTimeout()
            readable, _, _ = select.select(
                [self._answer_read], [], [], min(POLL_INTERVAL_S, remaining)
            )
            if not readable:
                if self.process.poll() is not None and not self._has_data():
                    # Dead, yet the pipe is open: a child of the worker holds it.
                    raise WorkerGone(describe_exit(self.process.returncode))
                continue
            chunk = os.read(self._answer_read, 1 << 20)
            if not chunk:  # every writer is gone: the worker died
                raise WorkerGone(describe_exit(self.process.wait()))
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return json.loads(line)

    def _has_data(self) -> bool:
        readable, _, _ = select.select([self._answer_read], [], [], 0)
        return bool(readable)

    def log_tail(self, limit: int = 8192) -> str:
        try:
            data = Path(self._log.name).read_bytes()
        except OSError:
            return ""
        return data[-limit:].decode("utf-8", errors="replace")

    def kill(self) -> None:
        """Stop the worker and everything it started; safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        # The whole group, even when the leader is already dead: compiler
        # subprocesses user code started may outlive it.
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            if self.process.poll() is None:
                self.process.kill()
        self.process.wait()
        with self._lock:
            reading = self._receiving
        if not reading:
            self._close_pipes()
        self._log.close()

    def _close_pipes(self) -> None:
        with self._lock:
            if self._pipes_closed:
                return
            self._pipes_closed = True
        for fd in (self._request_write, self._answer_read):
            try:
                os.close(fd)
            except OSError:
                pass
