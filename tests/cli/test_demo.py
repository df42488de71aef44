"""``make demo`` runs ``python -m fullgraph.lsp_server.demo``; a short version of it here.

One example, the eager backend and a few iterations keep it quick; the full
demo (Inductor, every example) is what ``make demo`` runs.
"""

from __future__ import annotations

import os
import subprocess
import sys

from cli_helpers import REPO, needs_explain


@needs_explain
def test_demo_prints_breaks_graph_counts_and_a_timing_table():
    import fullgraph.runtime  # after the skip: the Python 3.10 leg has no torch

    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(REPO / ".cache" / "inductor"))
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "fullgraph.lsp_server.demo",
            "--entry",
            "examples.print_in_forward:entry",
            "--backend",
            "eager",
            "--iterations",
            "3",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    out = completed.stdout
    assert "examples/print_in_forward.py:15:9: FG201 " in out
    assert "examples.print_in_forward:entry: 2 graphs, 1 break" in out
    (row,) = [line for line in out.splitlines() if line.startswith("print_in_forward ")]
    cells = row.split()
    assert cells[1] == "2"  # graphs
    assert float(cells[2]) > 0  # eager ms
    assert float(cells[3]) > 0  # torch.compile ms
    if hasattr(fullgraph.runtime, "compile"):
        assert "fullgraph failed" not in out, out
    assert "forward: mean activation" not in out  # the model's prints stay out of the table
