"""``fullgraph check`` and ``fullgraph fix`` on a Jupyter notebook (``.ipynb``).

The fixture ``tests/lsp/workspace/notebooks/gate.ipynb`` (the one the
language-server tests open) has a markdown cell, a cell with a line magic
and the imports, a model class with a tensor-dependent ``if`` (FG101) in cell 3,
a shell escape, a compiled function that prints (FG102) in cell 5 and a
``%%time`` cell.  Cell numbers count every cell, markdown included.
"""

from __future__ import annotations

import difflib
import json
import shutil
from pathlib import Path

from cli_helpers import REPO, json_output, needs_fix, needs_lint, needs_torch, run_cli

NOTEBOOK = REPO / "tests" / "lsp" / "workspace" / "notebooks" / "gate.ipynb"


def copy(tmp_path: Path) -> Path:
    target = tmp_path / "gate.ipynb"
    shutil.copyfile(NOTEBOOK, target)
    return target


def broken_notebook(tmp_path: Path) -> Path:
    """gate.ipynb with a cell 4 that is not Python (and not a magic)."""
    data = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    data["cells"][3]["source"] = ["def half(:\n"]
    target = tmp_path / "broken.ipynb"
    target.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return target


@needs_lint
def test_check_reports_findings_at_their_cell_and_line(tmp_path):
    copy(tmp_path)
    completed = run_cli("check", "--no-progress", ".", cwd=tmp_path)
    assert completed.returncode == 1, completed.stderr
    lines = completed.stdout.splitlines()
    assert any(line.startswith("gate.ipynb:cell 3:3:12: FG101 [*]") for line in lines), lines
    assert any(line.startswith("gate.ipynb:cell 5:3:5: FG102 [*]") for line in lines), lines
    # The magics (%matplotlib, !nvidia-smi, %%time) are neither errors nor findings.
    assert "FG001" not in completed.stdout
    assert "1 file checked" in completed.stdout


@needs_lint
def test_check_json_names_the_cell(tmp_path):
    copy(tmp_path)
    data = json_output(run_cli("check", "--no-progress", "--json", "gate.ipynb", cwd=tmp_path))
    found = {(d["code"], d["cell"], d["line"], d["column"]) for d in data["diagnostics"]}
    assert ("FG101", 3, 3, 11) in found and ("FG102", 5, 3, 4) in found, found


@needs_lint
def test_a_cell_that_does_not_parse_is_reported_and_the_others_still_checked(tmp_path):
    broken_notebook(tmp_path)
    completed = run_cli("check", "--no-progress", "broken.ipynb", cwd=tmp_path)
    assert completed.returncode == 1
    assert "broken.ipynb:cell 4:1:" in completed.stdout and "FG001 SyntaxError" in completed.stdout
    assert "broken.ipynb:cell 3:3:12: FG101" in completed.stdout
    sarif = json.loads(
        run_cli("check", "--no-progress", "--sarif", "broken.ipynb", cwd=tmp_path).stdout
    )
    cells = {
        (result["ruleId"], result["locations"][0]["properties"]["cell"])
        for result in sarif["runs"][0]["results"]
    }
    assert ("FG001", 4) in cells and ("FG101", 3) in cells, cells


@needs_fix
def test_fix_rewrites_only_the_cells_sources(tmp_path):
    target = copy(tmp_path)
    before = target.read_text(encoding="utf-8")
    completed = run_cli("fix", "gate.ipynb", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    after = target.read_text(encoding="utf-8")
    assert after != before
    # Every changed line is an item of a cell's "source" list; outputs (with their
    # non-ASCII text), metadata and layout are the same bytes.
    changed = [
        line[1:]
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    assert changed and all(line.startswith('    "') for line in changed), changed
    assert "no GPU — “ok”" in after
    cells = [("".join(cell["source"])) for cell in json.loads(after)["cells"]]
    assert "torch.where(x.sum() > 0, x * 2, x - 1)" in cells[2]
    assert "deferred(print" in cells[4]
    assert cells[1].startswith("from fullgraph.refactors.support import")  # before its use
    assert cells[1].splitlines()[1] == "%matplotlib inline"
    assert cells[3] == "!nvidia-smi" and cells[5].startswith("%%time")
    # Fixed: nothing left to report, and fixing again changes nothing.
    assert run_cli("check", "--no-progress", "gate.ipynb", cwd=tmp_path).returncode == 0
    run_cli("fix", "gate.ipynb", cwd=tmp_path)
    assert target.read_text(encoding="utf-8") == after


@needs_fix
def test_fix_diff_on_a_notebook_changes_nothing_on_disk(tmp_path):
    target = copy(tmp_path)
    before = target.read_bytes()
    completed = run_cli("fix", "--diff", "gate.ipynb", cwd=tmp_path)
    assert completed.returncode == 1
    assert completed.stdout.startswith("--- a/gate.ipynb\n+++ b/gate.ipynb\n")
    assert '+    "        y = torch.where(x.sum() > 0, x * 2, x - 1)\\n",' in completed.stdout
    assert target.read_bytes() == before


@needs_fix
def test_fix_refuses_a_notebook_with_a_cell_that_does_not_parse(tmp_path):
    target = broken_notebook(tmp_path)
    before = target.read_bytes()
    completed = run_cli("fix", "broken.ipynb", cwd=tmp_path)
    assert completed.returncode == 1
    assert "broken.ipynb: cannot fix: cell 4 does not parse" in completed.stderr
    assert "the notebook was left unchanged" in completed.stderr
    assert target.read_bytes() == before


def run_cells(notebook: Path) -> dict:
    """Run the notebook's Python code cells in order (IPython magics and cell magics
    skipped, as fullgraph reads them) and return what the cells computed."""
    from fullgraph.lsp_server.ipynb import read_cells
    from fullgraph.lsp_server.notebooks import combine

    combined = combine(read_cells(notebook.read_text(encoding="utf-8")))
    namespace: dict = {}
    exec(compile(combined.text, str(notebook), "exec"), namespace)  # noqa: S102 - our fixture
    return namespace


@needs_torch
@needs_fix
def test_the_fixed_notebook_computes_what_the_original_did(tmp_path):
    import torch

    target = copy(tmp_path)
    original = run_cells(target)
    assert run_cli("fix", "gate.ipynb", cwd=tmp_path).returncode == 0
    fixed = run_cells(target)
    assert "torch.where" in "".join(json.loads(target.read_text())["cells"][2]["source"])
    for x in (torch.ones(3), -torch.ones(3), torch.tensor([0.5, -2.0, 1.0])):
        assert torch.equal(original["Gate"]()(x), fixed["Gate"]()(x))
