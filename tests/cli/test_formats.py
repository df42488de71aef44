"""The printers on a hand-made check run: no worker, no runtime needed.

A synthetic report (valid against the report schema) with one break reached
from two entrypoints, through a two-frame call stack, and a file outside the
project root.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from cli_helpers import SCHEMA_PATH
from fullgraph.lsp_server.cli.check_run import CheckRun
from fullgraph.lsp_server.cli.sarif import to_sarif
from fullgraph.lsp_server.analysis.service import AnalysisResult
from fullgraph.lsp_server.cli.text_report import diagnostic_line, format_report, summary_line


def report(root: Path) -> dict:
    model, helper = str(root / "model.py"), str(root / "lib" / "helpers.py")
    return {
        "schema_version": 1,
        "tool": {"name": "fullgraph", "version": "0", "python": "3.11", "torch": "2"},
        "function": {"qualname": "Net.forward", "file": model, "line": 10},
        "status": "ok",
        "error": None,
        "graph_count": 2,
        "break_count": 2,
        "graphs": [
            {
                "index": 0,
                "op_count": 1,
                "op_counts": {"relu": 1},
                "inputs": ["x"],
                "outputs": ["relu"],
                "code": "def forward(self, x):\n    return (x.relu(),)",
            },
        ],
        "breaks": [
            {
                "code": "FG202",
                "category": "tensor-value-read",
                "function": "Tensor.item",
                "file": helper,
                "line": 4,
                "column": 11,
                "end_line": 4,
                "end_column": 19,
                "stack": [
                    {"file": model, "line": 12, "column": 8, "function": "forward"},
                    {"file": helper, "line": 4, "column": 11, "function": "scale"},
                ],
                "message": "Python reads a tensor's data: Tensor.item",
                "explanation": "why",
                "hint": "keep it a tensor",
            },
            {
                "code": "FG201",
                "category": "python-side-effect",
                "function": "builtins.print",
                "file": "/elsewhere/site.py",
                "line": 1,
                "column": 0,
                "end_line": 1,
                "end_column": 5,
                "stack": [],
                "message": "print",
                "explanation": "",
                "hint": "",
            },
        ],
        "guards": [{"record": 0, "source": "def guard(A):\n    return True", "check_count": 1}],
        "mocks": [{"record": 0, "source": "def mock(I):\n    return I[0]"}],
        "side_effects": [],
        "notes": ["not compiled: example note"],
    }


def run_with_two_entries(root: Path) -> CheckRun:
    results = [
        AnalysisResult(entry=f"pkg.entries:{name}", status="ok", report=report(root))
        for name in ("a", "b")
    ]
    return CheckRun(root=root, results=results)


def test_synthetic_report_is_schema_valid(tmp_path):
    jsonschema.validate(report(tmp_path), json.loads(SCHEMA_PATH.read_text()))


def test_a_break_reached_twice_is_one_diagnostic(tmp_path):
    run = run_with_two_entries(tmp_path)
    diagnostics = [d for d in run.diagnostics() if d.code == "FG202"]
    assert len(diagnostics) == 1
    assert diagnostics[0].entries == ["pkg.entries:a", "pkg.entries:b"]
    assert run.summary()["graphs"] == 4  # graphs are per entrypoint
    assert run.summary()["breaks_by_category"] == {
        "tensor-value-read": 1,
        "python-side-effect": 1,
    }
    assert diagnostic_line(diagnostics[0], cwd=tmp_path) == (
        "lib/helpers.py:4:12: FG202 Python reads a tensor's data: Tensor.item"
    )
    assert summary_line(run).startswith("Found 2 graph breaks (python-side-effect: 1, ")
    assert run.exit_code() == 1


def test_sarif_stacks_innermost_first_and_uris(tmp_path):
    sarif = to_sarif(run_with_two_entries(tmp_path))
    results = {r["ruleId"]: r for r in sarif["runs"][0]["results"]}
    frames = results["FG202"]["stacks"][0]["frames"]
    assert [f["location"]["message"]["text"] for f in frames] == ["in scale", "in forward"]
    inner = frames[0]["location"]["physicalLocation"]
    assert inner["artifactLocation"] == {"uri": "lib/helpers.py", "uriBaseId": "%SRCROOT%"}
    assert inner["region"] == {"startLine": 4, "startColumn": 12}
    region = results["FG202"]["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 4, "startColumn": 12, "endLine": 4, "endColumn": 20}
    assert results["FG202"]["properties"]["entrypoints"] == ["pkg.entries:a", "pkg.entries:b"]
    outside = results["FG201"]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert outside == {"uri": "file:///elsewhere/site.py"}


def test_explain_text_has_every_section(tmp_path):
    text = format_report(report(tmp_path), cwd=tmp_path)
    assert text.startswith("Net.forward (model.py:10)\nstatus: ok   graphs: 2   breaks: 2")
    for heading in (
        "Breaks (2)",
        "Graph 0 (1 ops)",
        "Guard of record 0 (1 checks)",
        "Mock of record 0",
    ):
        assert heading in text
    assert "lib/helpers.py:4:12: FG202 [tensor-value-read]" in text
    assert "        model.py:12 in forward" in text
    assert "Notes\n-----\n- not compiled: example note" in text
