"""What the refactors tests need besides the rules: torch, and the runtime.

(A plain module, not conftest.py, like ``cli_helpers``.)  The static rules run
on Python 3.10+ without torch, and the 3.10 leg installs none; a test that runs
the original and the rewritten code needs torch, one that monitors it needs
the runtime too (torch and CPython 3.11-3.13).  Each skips with the reason.
"""

from __future__ import annotations

import importlib
import importlib.util

import pytest

HAVE_TORCH = importlib.util.find_spec("torch") is not None
NO_TORCH = "torch is not installed here (the static-only Python 3.10 leg): this test runs the code"


def _runtime_unavailable() -> str | None:
    if not HAVE_TORCH:
        return NO_TORCH
    runtime = importlib.import_module("fullgraph.runtime")
    try:
        runtime.check_supported()
    except runtime.UnsupportedPythonError as exc:
        return f"the runtime does not run on this interpreter: {exc}"
    return None


RUNTIME_UNAVAILABLE = _runtime_unavailable()

needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason=NO_TORCH)
needs_runtime = pytest.mark.skipif(
    RUNTIME_UNAVAILABLE is not None, reason=RUNTIME_UNAVAILABLE or ""
)
