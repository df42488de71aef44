"""``make demo`` runs ``python -m fullgraph.lsp_server.cli.demo``; a short version of it here.

One example, the eager backend and a few iterations keep it quick; the full
demo (Inductor, every example) is what ``make demo`` runs.
"""

from __future__ import annotations

import os
import subprocess
import sys

from cli_helpers import REPO, needs_explain


@needs_explain
def test_demo_shows_breaks_the_fix_graphs_and_speed_before_and_after():
    import fullgraph.runtime  # after the skip: the Python 3.10 leg has no torch

    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(REPO / ".cache" / "inductor"))
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "fullgraph.lsp_server.cli.demo",
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
    # 2. the fix, applied to a copy (the example itself is never written)
    assert "+++ b/.cache/demo/examples_fixed/print_in_forward.py" in out
    assert '+        deferred(print, "forward: mean activation", h.mean())' in out
    assert "deferred(" not in (REPO / "examples" / "print_in_forward.py").read_text()
    # 3. graphs before -> after, for both compilers
    (graphs,) = [line for line in out.splitlines() if line.startswith("print_in_forward ")][:1]
    assert graphs.split()[1:] == ["2", "->", "1", "2", "->", "1"], graphs
    # 4. step times before and after: model, code ("as is" / "fixed"), eager, torch.compile
    rows = {
        "fixed" if " fixed " in line else "as is": line.split()
        for line in out.split("== 4.")[1].splitlines()
        if line.startswith("print_in_forward ")
    }
    assert rows["as is"][1:3] == ["as", "is"] and rows["fixed"][1] == "fixed"
    assert float(rows["as is"][3]) > 0 and float(rows["as is"][4]) > 0
    assert float(rows["fixed"][2]) > 0 and float(rows["fixed"][3]) > 0
    if hasattr(fullgraph.runtime, "compile"):
        assert "fullgraph failed" not in out, out
        assert "outputs differ" not in out, out
    assert "forward: mean activation" not in out.split("== 3.")[1]  # prints stay out of tables
