"""Findings people can trust, through ``fullgraph check``: one per site, named callers,
advice that fits the statement, and tracebacks that start at the user's code.

The fixture ``projects/kinds`` has one submodule (``Block``) whose forward reads
tensor data four ways (an ``assert``, an f-string, an ``if``, arithmetic on
``.item()``), reached from two entrypoints: the model around it and the block
alone.
"""

from __future__ import annotations

import pytest
from cli_helpers import PROJECTS, json_output, line_of, needs_explain, run_cli

from fullgraph.lsp_server.break_hints import HINTS

KINDS = PROJECTS / "kinds"
BLOCKS = KINDS / "kinds" / "blocks.py"
# text at the read -> the kind of advice it must get
READS = {
    "h.abs().max() < 1e6": "assert",
    'f"h = {h.sum()}"': "f-string",
    "h.mean() > 0": "branch",
    "h.max().item()": "item-arithmetic",
}

pytestmark = needs_explain


@pytest.fixture(scope="module")
def check_json():
    completed = run_cli(
        "check", "--no-static", "--json", "--severity", "information", cwd=KINDS, timeout=400
    )
    assert completed.returncode == 1, completed.stderr
    return json_output(completed)


def at(diagnostics: list[dict], text: str) -> list[dict]:
    """The diagnostics that start within ``text`` (Python 3.12 places a read inside an
    f-string at the formatted expression, 3.11 at the f-string)."""
    line, column = line_of(BLOCKS, text)
    return [
        d for d in diagnostics if d["line"] == line and column <= d["column"] < column + len(text)
    ]


def test_each_site_is_one_diagnostic_naming_both_entrypoints(check_json):
    runtime = [d for d in check_json["diagnostics"] if d["origin"] == "runtime"]
    sites = [(d["code"], d["line"], d["column"]) for d in runtime]
    assert len(sites) == len(set(sites)), runtime
    for text in READS:
        (diagnostic,) = [d for d in at(runtime, text) if d["code"] == "FG202"]
        assert diagnostic["entries"] == ["kinds.blocks:build_model", "kinds.blocks:build_block"]
        # The caller chain carries class names (the report's frames say `forward`).
        assert [f["qualname"] for f in diagnostic["stack"]] == ["Model.forward", "Block.forward"]


def test_each_kind_of_read_gets_its_own_advice(check_json):
    hints = {}
    for text, kind in READS.items():
        (diagnostic,) = [d for d in at(check_json["diagnostics"], text) if d["code"] == "FG202"]
        assert diagnostic["hint"] == HINTS[kind], text
        hints[kind] = diagnostic["hint"]
    assert len(set(hints.values())) == len(READS)  # not one generic hint


def test_text_output_shows_the_chain_and_the_hint():
    completed = run_cli("check", "--no-static", "--no-progress", cwd=KINDS, timeout=400)
    lines = completed.stdout.splitlines()
    line, column = line_of(BLOCKS, "h.abs().max() < 1e6")
    index = lines.index(
        next(x for x in lines if x.startswith(f"kinds/blocks.py:{line}:{column + 1}: FG202"))
    )
    assert lines[index + 1] == (
        "    reached as Model.forward → Block.forward from "
        "kinds.blocks:build_model, kinds.blocks:build_block"
    )
    assert lines[index + 2] == f"    hint: {HINTS['assert']}"


def test_a_refused_fix_says_why_in_the_text_output(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.fullgraph]\n")
    (tmp_path / "step.py").write_text("import torch\n\n\ndef build():\n    return torch.ones(2)\n")
    completed = run_cli("check", "--severity", "hint", "--no-progress", cwd=tmp_path)
    lines = completed.stdout.splitlines()
    index = next(i for i, x in enumerate(lines) if x.startswith("step.py:4:5: FG106"))
    assert lines[index + 1].startswith("    no automatic fix: NO_TENSOR_PARAMETERS")


def test_a_users_traceback_starts_at_the_users_code():
    completed = run_cli(
        "check", "--no-static", "--json", "--entry", "kinds.blocks:build_raising", cwd=KINDS
    )
    (result,) = json_output(completed)["entrypoints"]
    assert result["status"] == "user_exception"
    traceback = result["error"]["traceback"]
    frames = [x.strip() for x in traceback.splitlines() if x.strip().startswith("File ")]
    assert frames[0].startswith(f'File "{BLOCKS}", line ') and frames[0].endswith("in forward")
    assert frames[-1].endswith("in check")
    assert len(frames) == 2, traceback  # no runtime, worker or nn.Module.__call__ frames
    assert traceback.rstrip().endswith("ValueError: bad batch of 2")
