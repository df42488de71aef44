"""Prints and logging in a function that a compiled function of another file calls
(issue 16, point 3): found by ``fullgraph check``, fixed by ``fullgraph fix``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from fullgraph.refactors import IncrementalLinter, lint_source, workspace_entrypoints

HELPERS = """import logging

import torch

log = logging.getLogger(__name__)


def noisy(x):
    print("noisy", x.shape)
    return deeper(x) * 2


def deeper(x):
    log.info("deeper %s", x.shape)
    return x + 1


def unused(x):
    print("never called from compiled code")
    return x
"""
MODEL = """import torch
from torch import nn

from .helpers import noisy
from . import other


class Model(nn.Module):
    def forward(self, x):
        return other.scaled(noisy(x))
"""
OTHER = """def scaled(x):
    print("scaled")
    return x * 3
"""


def _workspace(tmp_path: Path) -> Path:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helpers.py").write_text(HELPERS)
    (package / "model.py").write_text(MODEL)
    (package / "other.py").write_text(OTHER)
    (tmp_path / "pyproject.toml").write_text("[tool.fullgraph]\n")
    return package


def test_functions_called_from_a_compiled_function_elsewhere_are_entrypoints(tmp_path):
    package = _workspace(tmp_path)
    called = workspace_entrypoints(sorted(package.glob("*.py")), tmp_path)
    helpers, other = (package / "helpers.py").resolve(), (package / "other.py").resolve()
    assert set(called) == {helpers, other}
    assert set(called[helpers]) == {"noisy"}  # not `unused`; `deeper` follows in the file
    assert "pkg.model.forward" in called[helpers]["noisy"]
    findings = lint_source(HELPERS, str(helpers), entrypoints=called[helpers])
    shown = [(f.code, f.line) for f in findings if f.severity != "hint"]
    assert shown == [("FG102", 9), ("FG102", 14)]
    assert "pkg.model.forward" in findings[0].message
    # Alone, the file has no compiled region: every finding is a hint.
    assert all(f.severity == "hint" for f in lint_source(HELPERS) if f.code == "FG102")


def test_the_editor_names_the_caller_in_another_file_too(tmp_path):
    """The incremental linter (the editor's) keeps each entrypoint's reason (issue 18)."""
    package = _workspace(tmp_path)
    helpers = (package / "helpers.py").resolve()
    called = workspace_entrypoints(sorted(package.glob("*.py")), tmp_path)[helpers]
    linter = IncrementalLinter(str(helpers), entrypoints=called)
    findings = linter.lint(HELPERS)
    assert findings == lint_source(HELPERS, str(helpers), entrypoints=called)
    printed = next(f for f in findings if f.code == "FG102" and f.line == 9)
    assert "pkg.model.forward" in printed.message
    assert "a configured entrypoint" not in printed.message
    # After an edit, the re-linted chunks still name it.
    edited = HELPERS.replace('print("noisy", x.shape)', 'print("noisy!", x.shape)')
    printed = next(f for f in linter.lint(edited) if f.code == "FG102" and f.line == 9)
    assert "pkg.model.forward" in printed.message


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fullgraph.lsp_server.cli", *args],
        cwd=cwd,
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_check_reports_and_fix_fixes_the_prints_of_a_helper_in_another_file(tmp_path):
    _workspace(tmp_path)
    checked = _cli(tmp_path, "check", "pkg")
    assert "pkg/helpers.py:9:5: FG102" in checked.stdout
    assert "pkg/helpers.py:14:5: FG102" in checked.stdout
    assert "pkg/other.py:2:5: FG102" in checked.stdout
    assert "helpers.py:19" not in checked.stdout  # `unused` is not compiled code
    # Only the helper is named: its caller is still found in the workspace.
    _cli(tmp_path, "fix", "pkg/helpers.py")
    fixed = (tmp_path / "pkg" / "helpers.py").read_text()
    assert 'deferred(print, "noisy", x.shape)' in fixed
    assert 'print("never called from compiled code")' in fixed
