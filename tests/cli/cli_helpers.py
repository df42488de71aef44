"""Helpers for the end-to-end CLI tests: run ``fullgraph`` in a subprocess.

(A plain module, not conftest.py: several test folders have a conftest, and
``from conftest import`` would pick whichever was imported last.)

The CLI is started as ``python -m fullgraph.lsp_server.cli`` with this
interpreter (the ``fullgraph`` console script runs the same ``main``).  Tests of
runtime analysis skip while the runtime's pieces are missing; the isolation
tests need no runtime and always run.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
PROJECTS = HERE / "projects"
ISOLATION = PROJECTS / "isolation"
SCHEMA_PATH = REPO / "lsp_server" / "report_schema.json"


def _runtime_unavailable() -> str | None:
    """Why the runtime cannot run on this interpreter, or None when it can.

    The static rules, the CLI and the server support Python 3.10+; the runtime
    needs torch and a CPython whose frames it reads (3.11-3.13).  The 3.10 leg
    installs no torch.
    """
    try:
        runtime = importlib.import_module("fullgraph.runtime")
    except ImportError as exc:
        return (
            f"the runtime cannot be imported here ({exc}); the static rules and the CLI still run"
        )
    try:
        runtime.check_supported()
    except runtime.UnsupportedPythonError as exc:
        return f"the runtime does not run on this interpreter: {exc}"
    return None


RUNTIME_UNAVAILABLE = _runtime_unavailable()
HAS_TORCH = importlib.util.find_spec("torch") is not None
if RUNTIME_UNAVAILABLE is None:
    import fullgraph.runtime

    HAS_EXPLAIN = hasattr(fullgraph.runtime, "explain")
    # The public name arrived before its implementation module; require both.
    HAS_WRAPPER = (
        hasattr(fullgraph.runtime, "generate_wrapper")
        and importlib.util.find_spec("fullgraph.runtime.wrapper.generate") is not None
    )
else:
    HAS_EXPLAIN = HAS_WRAPPER = False


def _has(module: str, name: str) -> bool:
    try:
        return hasattr(importlib.import_module(module), name)
    except ImportError:
        return False


HAS_LINT = _has("fullgraph.refactors", "lint_source")
HAS_FIX = _has("fullgraph.refactors", "fix_source")

needs_explain = pytest.mark.skipif(
    not HAS_EXPLAIN,
    reason=RUNTIME_UNAVAILABLE or "fullgraph.runtime.explain is not built yet (runtime issue)",
)
needs_wrapper = pytest.mark.skipif(
    not HAS_WRAPPER,
    reason=RUNTIME_UNAVAILABLE
    or "fullgraph.runtime.generate_wrapper is not built yet (runtime issue)",
)
needs_torch = pytest.mark.skipif(
    not HAS_TORCH, reason="torch is not installed here (the static-only Python 3.10 leg)"
)
needs_lint = pytest.mark.skipif(
    not HAS_LINT, reason="fullgraph.refactors.lint_source is not built yet (refactors issue)"
)
needs_fix = pytest.mark.skipif(
    not HAS_FIX, reason="fullgraph.refactors.fix_source is not built yet (refactors issue)"
)


def run_cli(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.setdefault("TORCHINDUCTOR_CACHE_DIR", str(REPO / ".cache" / "inductor"))
    return subprocess.run(
        [sys.executable, "-m", "fullgraph.lsp_server.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def json_output(completed: subprocess.CompletedProcess[str]) -> dict:
    try:
        return json.loads(completed.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"stdout is not JSON:\n{completed.stdout[:2000]}\nstderr:\n{completed.stderr}")


def line_of(path: Path, needle: str) -> tuple[int, int]:
    """1-based line and 0-based column of the first occurrence of ``needle``."""
    for number, text in enumerate(path.read_text().splitlines(), 1):
        if needle in text:
            return number, text.index(needle)
    raise AssertionError(f"{needle!r} not in {path}")
