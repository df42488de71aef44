"""A client nobody here wrote: headless Neovim gets diagnostics and applies a quick fix.

tests/lsp/nvim/quickfix.lua starts the server with ``vim.lsp.start_client``,
opens models/gate.py, waits for the FG101 diagnostic, applies the server's
quick fix and waits for the diagnostic to clear; it writes what it saw as
JSON.  Skipped (visibly) when ``nvim`` is not installed — CI installs it with
.ci/install-editors.sh.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from lsp_helpers import needs_refactors

SCRIPT = Path(__file__).parent / "nvim" / "quickfix.lua"

pytestmark = [
    needs_refactors,
    pytest.mark.skipif(
        shutil.which("nvim") is None, reason="nvim is not installed (run .ci/install-editors.sh)"
    ),
]


def test_neovim_receives_diagnostics_and_applies_a_quick_fix(workspace: Path, tmp_path: Path):
    result_path = tmp_path / "nvim-result.json"
    env = dict(os.environ)
    env.update(
        FULLGRAPH_PYTHON=sys.executable,
        FULLGRAPH_ROOT=str(workspace),
        FULLGRAPH_FILE=str(workspace / "models" / "gate.py"),
        FULLGRAPH_RESULT=str(result_path),
        HOME=str(tmp_path),  # no user config, shada or swap files from the machine
        XDG_STATE_HOME=str(tmp_path / "state"),
        XDG_DATA_HOME=str(tmp_path / "data"),
    )
    completed = subprocess.run(
        ["nvim", "--headless", "-u", "NONE", "-i", "NONE", "-n", "-c", f"luafile {SCRIPT}"],
        cwd=workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=180,
    )
    assert result_path.exists(), completed.stderr.decode(errors="replace")
    result = json.loads(result_path.read_text())
    assert result["ok"], result
    assert {"FG101", "FG103"} <= {d["code"] for d in result["before"]}
    assert "FG101" in result["action"]
    assert "y = torch.where(x.sum() > 0, x * 2, x - 1)" in result["text"]
    after = {d["code"] for d in result["after"]}
    assert "FG101" not in after and "FG103" in after
    # Neovim edited its buffer; the file on disk is untouched.
    assert "if x.sum() > 0:" in (workspace / "models" / "gate.py").read_text()
