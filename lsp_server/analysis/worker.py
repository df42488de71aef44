"""The analysis worker: the only place where user code runs.

Started by :mod:`fullgraph.lsp_server.analysis.service` as
``python -m fullgraph.lsp_server.analysis.worker --request-fd R --result-fd W --root DIR``
under the user's interpreter.  It caps its own memory, imports torch and
the runtime once (the slow part, so the process is kept warm between
analyses), then serves requests: one JSON object per line on fd ``R``, one JSON
answer per line on fd ``W``.

Standard output and error belong to the user's program.  For each request
they are pointed (at the file-descriptor level, so C extensions and
subprocesses are captured too) at files the service chose; protocol messages
never go there.  A user exception, ``sys.exit`` or a configuration mistake is
an answer; a hang, ``os.abort()`` or a segfault kills this process only, and
the service reports it and starts a fresh worker.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import faulthandler
import functools
import importlib
import json
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from fullgraph.lsp_server.analysis.tracebacks import without_frames
from fullgraph.lsp_server.entrypoints import build_target, parse_entrypoint, reached_functions
from fullgraph.lsp_server.errors import ConfigError

PROTOCOL_VERSION = 1


def _cap_memory(memory_mb: int) -> None:
    if memory_mb <= 0:
        return
    try:
        import resource
    except ImportError:  # not POSIX: no cap rather than no analysis
        return
    limit = memory_mb * 1024 * 1024
    # RLIMIT_DATA (heap and private writable mappings), not RLIMIT_AS: the
    # CUDA driver reserves tens of GiB of address space it never touches, so
    # an address-space cap would make every GPU model fail to initialize.
    _soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))


def _exit_with_parent() -> None:
    """Exit when the service process is gone, even while user code is running.

    (``PR_SET_PDEATHSIG`` would fire when the *thread* that started us exits,
    which in a threaded language server is any time; watching the parent id
    is portable and exact.)
    """
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(3)

    threading.Thread(target=watch, name="fullgraph-parent-watch", daemon=True).start()


class _Channel:
    """Newline-delimited JSON over two inherited pipe descriptors."""

    def __init__(self, request_fd: int, result_fd: int):
        # Processes user code starts must not hold our pipe ends: the service
        # learns that this worker died when the answer pipe reaches EOF.
        for fd in (request_fd, result_fd):
            os.set_inheritable(fd, False)
        self._requests = os.fdopen(request_fd, "rb", buffering=0)
        self._result_fd = result_fd

    def receive(self) -> dict[str, Any] | None:
        line = self._requests.readline()
        if not line:
            return None  # the service closed the pipe: shut down
        return json.loads(line)

    def send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message, default=repr) + "\n").encode("utf-8")
        view = memoryview(data)
        while view:
            written = os.write(self._result_fd, view)
            view = view[written:]


@contextlib.contextmanager
def _captured_output(stdout_path: str, stderr_path: str) -> Iterator[None]:
    """Send fds 1 and 2 (and sys.stdout/sys.stderr) to the request's files."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    saved_fds = os.dup(1), os.dup(2)
    saved_streams = sys.stdout, sys.stderr
    with open(stdout_path, "ab", buffering=0) as out, open(stderr_path, "ab", buffering=0) as err:
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
    try:
        yield
    finally:
        # User code may have replaced or closed the stream objects.
        sys.stdout, sys.stderr = saved_streams
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os.dup2(saved_fds[0], 1)
        os.dup2(saved_fds[1], 2)
        os.close(saved_fds[0])
        os.close(saved_fds[1])


def _error(exc: BaseException, *, user: bool = False, root: Path | None = None) -> dict[str, Any]:
    """Type, message and traceback; a user error's traceback starts at the user's code."""
    if isinstance(exc, SystemExit):
        message = f"sys.exit({exc.code!r}) was called"
    else:
        message = str(exc)
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    if user:
        text = user_traceback(text, root)
    return {"type": type(exc).__qualname__, "message": message, "traceback": text}


@functools.lru_cache(maxsize=1)
def _tool_dirs() -> tuple[str, ...]:
    """Source folders of fullgraph itself: frames there are not the user's."""
    here = Path(__file__).resolve().parents[1]  # lsp_server/, not only analysis/
    dirs = [str(here)]
    with contextlib.suppress(Exception):  # no torch: the runtime's frames cannot occur
        import fullgraph.runtime

        dirs.extend(str(Path(p).resolve()) for p in fullgraph.runtime.__path__)
    with contextlib.suppress(Exception):
        import fullgraph.refactors

        dirs.extend(str(Path(p).resolve()) for p in fullgraph.refactors.__path__)
    return tuple(dirs)


def _is_tool_frame(filename: str) -> bool:
    importlib_dir = os.path.dirname(importlib.__file__)
    return filename.startswith((*_tool_dirs(), importlib_dir, "<frozen importlib"))


def reached(target: Any) -> list[dict[str, str]]:
    """The functions an analysis of ``target`` runs (never fails the analysis)."""
    try:
        return reached_functions(target)
    except Exception:  # noqa: BLE001 - a user object's odd attributes cost only this list
        return []


def user_traceback(text: str, root: Path | None) -> str:
    """``text`` without fullgraph's frames, starting at the first frame under ``root``."""

    def is_user_file(filename: str) -> bool:
        return root is not None and _is_user_frame(filename, root)

    return without_frames(text, _is_tool_frame, is_user_file)


def _is_user_frame(filename: str, root: Path) -> bool:
    return (
        filename.startswith(str(root))
        and not _is_tool_frame(filename)
        and "site-packages" not in filename
    )


def _passes_through(exc: BaseException, root: Path) -> bool:
    """True when any frame of the traceback is the user's code under ``root``."""
    tb = exc.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if _is_user_frame(filename, root):
            return True
        tb = tb.tb_next
    return False


class Worker:
    """Serves analyze / compile_wrapper requests for one project root."""

    def __init__(self, root: Path):
        self.root = root.resolve()
        self._runtime = _runtime_api()

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        answer: dict[str, Any] = {"id": request.get("id"), "report": None, "error": None}
        op = request.get("op")
        importlib.invalidate_caches()  # a module created since the last request is found
        with _captured_output(request["stdout_path"], request["stderr_path"]):
            try:
                entry = parse_entrypoint(request.get("entry"), key=request.get("key", "entry"))
                target = build_target(entry, key=request.get("key", "entry"))
            except ConfigError as exc:
                return {**answer, "status": "config_error", "error": exc.to_json()}
            except BaseException as exc:  # noqa: BLE001 - user code may raise anything
                return {
                    **answer,
                    "status": "user_exception",
                    "error": _error(exc, user=True, root=self.root),
                }
            if op == "analyze":
                return {**answer, **self._analyze(target)}
            if op == "compile_wrapper":
                return {**answer, **self._compile_wrapper(target, str(entry))}
            return {
                **answer,
                "status": "crashed",
                "error": {
                    "type": "ProtocolError",
                    "message": f"unknown op {op!r}",
                    "traceback": "",
                },
            }

    def _tool_failure(self, exc: BaseException, what: str) -> dict[str, Any]:
        """An exception escaping the runtime: the user's if raised in user code."""
        if _passes_through(exc, self.root):
            return {"status": "user_exception", "error": _error(exc, user=True, root=self.root)}
        error = _error(exc)
        error["message"] = f"{what} failed inside fullgraph: {error['message']}"
        return {"status": "crashed", "error": error}

    def _missing(self, name: str) -> dict[str, Any]:
        return {
            "status": "crashed",
            "error": {
                "type": "RuntimeUnavailable",
                "message": f"fullgraph.runtime.{name} is not available in this installation",
                "traceback": "",
            },
        }

    def _analyze(self, target: Any) -> dict[str, Any]:
        if self._runtime is None:
            return self._missing("explain")
        try:
            report = self._runtime.explain(target.fn, *target.args, **target.kwargs)
            data = report.to_json()
        except BaseException as exc:  # noqa: BLE001
            return self._tool_failure(exc, "explain")
        status = data.get("status", "ok")
        error = data.get("error")
        if status == "user_exception" and isinstance(error, dict) and error.get("traceback"):
            # The runtime formats the user's exception as it came through its monitor.
            error["traceback"] = user_traceback(str(error["traceback"]), self.root)
        return {"status": status, "report": data, "error": error, "reached": reached(target)}

    def _compile_wrapper(self, target: Any, entry: str) -> dict[str, Any]:
        if self._runtime is None:
            return self._missing("generate_wrapper")
        try:
            # The entrypoint lets the generated module rebuild the model in a fresh process.
            source = self._runtime.generate_wrapper(
                target.fn, *target.args, entrypoint=entry, **target.kwargs
            )
        except BaseException as exc:  # noqa: BLE001
            return self._tool_failure(exc, "generate_wrapper")
        return {"status": "ok", "wrapper": source}


@dataclasses.dataclass(frozen=True)
class RuntimeAPI:
    """The two public runtime functions the worker calls.

    Imported once, at start: a submodule of the same name, once imported,
    replaces the package attribute (``fullgraph.runtime.explain`` the function
    vs. the module); the function is what we call.
    """

    explain: Callable[..., Any]
    generate_wrapper: Callable[..., Any]


def _runtime_api() -> RuntimeAPI | None:
    """The runtime's API, or None where it cannot be imported (no torch: reported per request)."""
    try:
        from fullgraph.runtime import explain, generate_wrapper
    except Exception:  # noqa: BLE001 - a broken install is reported per request instead
        return None
    return RuntimeAPI(explain, generate_wrapper)


def _warm_up() -> dict[str, bool]:
    """Import the slow parts now (torch, the runtime), so the first analysis does not pay."""
    available = _runtime_api() is not None
    return {"explain": available, "generate_wrapper": available}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--request-fd", type=int, required=True)
    parser.add_argument("--result-fd", type=int, required=True)
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--memory-mb", type=int, default=0)
    options = parser.parse_args(argv)

    _exit_with_parent()
    _cap_memory(options.memory_mb)
    # A segfault or abort prints the Python stack to fd 2, which is the
    # request's stderr file while user code runs.
    faulthandler.enable()
    root = options.root.resolve()
    os.chdir(root)
    sys.path.insert(0, str(root))

    channel = _Channel(options.request_fd, options.result_fd)
    channel.send(
        {
            "type": "ready",
            "protocol": PROTOCOL_VERSION,
            "pid": os.getpid(),
            "python": sys.version.split()[0],
            "capabilities": _warm_up(),
        }
    )
    worker = Worker(root)
    while (request := channel.receive()) is not None:
        channel.send(worker.handle(request))
    return 0


if __name__ == "__main__":
    sys.exit(main())
