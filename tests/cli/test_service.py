"""The analysis service API the language server uses: cancellation, warm reuse, restarts.

These drive ``AnalysisService`` directly (the server calls it from threads);
user code still runs only in the worker subprocess.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pytest
from cli_helpers import ISOLATION

from fullgraph.lsp_server.config import Config
from fullgraph.lsp_server.analysis.service import AnalysisFailed, AnalysisService


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A private copy of the isolation project, so tests may edit its files."""
    root = tmp_path / "project"
    shutil.copytree(ISOLATION, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


@pytest.fixture
def service(project: Path):
    with AnalysisService(project, Config(timeout=60)) as svc:
        yield svc


def test_cancel_stops_a_running_analysis(service):
    warm = service.analyze("pkg.entries:raises")  # the worker is up: cancel hits user code
    assert warm.status == "user_exception"
    cancel = threading.Event()
    results = []
    thread = threading.Thread(
        target=lambda: results.append(service.analyze("pkg.entries:sleeps_forever", cancel=cancel))
    )
    thread.start()
    time.sleep(1.0)
    cancelled_at = time.monotonic()
    cancel.set()
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert time.monotonic() - cancelled_at < 15
    (result,) = results
    assert result.status == "cancelled"
    assert result.report is None
    # The busy worker was replaced: the next analysis runs normally in a new one.
    after = service.analyze("pkg.entries:raises")
    assert after.status == "user_exception"
    assert after.error["message"] == "cannot build the sample batch"
    assert service.workers_started == 2


def test_close_during_an_analysis_ends_it_as_cancelled(project):
    service = AnalysisService(project, Config(timeout=120))
    service.analyze("pkg.entries:raises")  # warm
    results = []
    thread = threading.Thread(
        target=lambda: results.append(service.analyze("pkg.entries:sleeps_forever"))
    )
    thread.start()
    # Close only once the analysis is under way: on a loaded machine the worker can
    # take over a second to take the request, and a close before that is a different
    # case (analyze on a closed service raises).
    deadline = time.monotonic() + 30
    while service._worker is None and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(3.0)
    closed_at = time.monotonic()
    service.close()
    thread.join(timeout=30)
    assert time.monotonic() - closed_at < 15
    assert [r.status for r in results] == ["cancelled"]
    with pytest.raises(RuntimeError, match="closed"):
        service.analyze("pkg.entries:raises")


def test_close_while_the_worker_starts_ends_the_analysis_as_cancelled(project):
    service = AnalysisService(project, Config(timeout=120))
    results = []
    thread = threading.Thread(target=lambda: results.append(service.analyze("pkg.entries:raises")))
    thread.start()
    deadline = time.monotonic() + 30
    while service._worker is None and time.monotonic() < deadline:
        time.sleep(0.01)
    service.close()  # the worker is still importing torch
    thread.join(timeout=30)
    assert [r.status for r in results] == ["cancelled"]


def test_cancel_before_start_returns_at_once(service):
    cancel = threading.Event()
    cancel.set()
    started = time.monotonic()
    result = service.analyze("pkg.entries:raises", cancel=cancel)
    assert result.status == "cancelled"
    assert time.monotonic() - started < 5
    assert service.workers_started == 0  # nothing was started for it


def test_warm_worker_is_reused_and_restarted_when_code_changes(service, project):
    first = service.analyze("pkg.entries:raises")
    second = service.analyze("pkg.entries:raises")
    assert (first.status, second.status) == ("user_exception", "user_exception")
    assert service.workers_started == 1
    # The user edits the module: the warm worker holds the old code and must go.
    entries = project / "pkg" / "entries.py"
    source = entries.read_text().replace("cannot build the sample batch", "edited message")
    entries.write_text(source)
    stat = entries.stat()
    os.utime(entries, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    third = service.analyze("pkg.entries:raises")
    assert service.workers_started == 2
    assert third.error["message"] == "edited message"


def test_crash_is_seen_while_a_forked_child_holds_the_pipes(service):
    result = service.analyze("pkg.entries:forks_then_aborts", timeout=45)
    # Not "timeout": the death was noticed although the pipe never reached EOF.
    assert result.status == "crashed"
    assert "SIGABRT" in result.error["message"]


def test_timeout_argument_overrides_the_config(service):
    started = time.monotonic()
    result = service.analyze("pkg.entries:sleeps_forever", timeout=2)
    assert result.status == "timeout"
    assert "did not finish within 2 s" in result.error["message"]
    assert time.monotonic() - started < 150  # start-up included


def test_compile_wrapper_failure_raises_with_the_result(service):
    with pytest.raises(AnalysisFailed) as caught:
        service.compile_wrapper("pkg.entries:returns_wrong_shape")
    assert caught.value.result.status == "config_error"


def test_memory_cap_turns_a_huge_allocation_into_a_result(project):
    (project / "pkg" / "hog.py").write_text(
        "def entry():\n    block = bytearray(3 * 1024**3)\n    return print, (len(block),)\n"
    )
    with AnalysisService(project, Config(timeout=60, memory_mb=2048)) as svc:
        result = svc.analyze("pkg.hog:entry")
    assert result.status == "user_exception"
    assert result.error["type"] == "MemoryError"


def test_missing_interpreter_is_a_config_error(project):
    missing = str(project / "no-such-python")
    with AnalysisService(project, Config(), python=missing) as svc:
        result = svc.analyze("pkg.entries:raises")
    assert result.status == "config_error"
    assert result.error["key"] == "python"
    assert result.error["value"] == missing


def test_interpreter_without_fullgraph_is_a_start_error(project, tmp_path):
    fake = tmp_path / "python-without-fullgraph"
    fake.write_text("#!/bin/sh\necho 'No module named fullgraph' >&2\nexit 1\n")
    fake.chmod(0o755)
    with AnalysisService(project, Config(), python=str(fake)) as svc:
        result = svc.analyze("pkg.entries:raises")
    assert result.status == "crashed"
    assert result.error["type"] == "WorkerStartError"
    assert "No module named fullgraph" in result.error["traceback"]
