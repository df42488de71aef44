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

import fullgraph.runtime
import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
PROJECTS = HERE / "projects"
ISOLATION = PROJECTS / "isolation"
SCHEMA_PATH = REPO / "lsp_server" / "report_schema.json"

HAS_EXPLAIN = hasattr(fullgraph.runtime, "explain")
# The public name arrived before its implementation module; require both.
HAS_WRAPPER = (
    hasattr(fullgraph.runtime, "generate_wrapper")
    and importlib.util.find_spec("fullgraph.runtime.wrapper") is not None
)


def _has(module: str, name: str) -> bool:
    try:
        return hasattr(importlib.import_module(module), name)
    except ImportError:
        return False


HAS_LINT = _has("fullgraph.refactors", "lint_source")
HAS_FIX = _has("fullgraph.refactors", "fix_source")

needs_explain = pytest.mark.skipif(
    not HAS_EXPLAIN, reason="fullgraph.runtime.explain is not built yet (runtime issue)"
)
needs_wrapper = pytest.mark.skipif(
    not HAS_WRAPPER, reason="fullgraph.runtime.generate_wrapper is not built yet (runtime issue)"
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
