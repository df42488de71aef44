"""Runtime analysis of the bundled examples through the CLI: reports, locations, schema.

Each example has one typical graph break at a known line; ``fullgraph check``
must report it at that line (1-based column in text, 0-based in JSON); reads of
the input's data that run as a check in front of the graph are reported at
their line as data checks, not breaks, and the graph stays whole; every
report must validate against ``lsp_server/report_schema.json``, and SARIF must
carry the same location plus the user call stack.
"""

from __future__ import annotations

import json

import jsonschema
import pytest
from cli_helpers import REPO, SCHEMA_PATH, json_output, line_of, needs_explain, run_cli

EXAMPLES = REPO / "examples"
# entrypoint -> (file, text at the break, code, category)
EXPECTED_BREAKS = {
    "examples.print_in_forward:entry": ("print_in_forward.py", "print(", "FG201"),
}
# entrypoint -> (file, text at the read, code): the input's data read in front of the graph
EXPECTED_DATA_CHECKS = {
    "examples.assert_on_data:entry": ("assert_on_data.py", "assert torch.isfinite", "FG202"),
    "examples.item_read:entry": ("item_read.py", "x.abs().max().item()", "FG202"),
    # Both paths of the branch run as one graph (torch.cond): a read, not a break.
    "examples.tensor_if:entry": ("tensor_if.py", "h.mean() > 0", "FG202"),
}

pytestmark = needs_explain


@pytest.fixture(scope="module")
def check_json():
    completed = run_cli("check", "examples", "--json", "--no-static", cwd=REPO, timeout=400)
    assert completed.returncode == 1, completed.stderr
    return json_output(completed)


def test_every_report_matches_the_schema(check_json):
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    results = check_json["entrypoints"]
    assert len(results) == 6  # the configured examples under examples/
    for result in results:
        assert result["status"] == "ok", result["error"]
        jsonschema.validate(result["report"], schema)


def test_clean_model_is_one_graph(check_json):
    (clean,) = [r for r in check_json["entrypoints"] if r["entry"] == "examples.clean_mlp:entry"]
    assert clean["report"]["graph_count"] == 1
    assert clean["report"]["breaks"] == []


@pytest.mark.parametrize("entry", sorted(EXPECTED_BREAKS))
def test_break_is_reported_at_its_source_line(check_json, entry):
    filename, needle, code = EXPECTED_BREAKS[entry]
    (result,) = [r for r in check_json["entrypoints"] if r["entry"] == entry]
    report = result["report"]
    assert report["graph_count"] >= 2  # the break splits the forward pass
    line, _ = line_of(EXAMPLES / filename, needle)
    breaks = [(b["code"], b["file"], b["line"]) for b in report["breaks"]]
    assert (code, str(EXAMPLES / filename), line) in breaks
    (diagnostic,) = [
        d
        for d in check_json["diagnostics"]
        if (d["code"], d["path"], d["line"]) == (code, str(EXAMPLES / filename), line)
    ]
    assert diagnostic["entries"] == [entry]
    assert diagnostic["origin"] == "runtime"


@pytest.mark.parametrize("entry", sorted(EXPECTED_DATA_CHECKS))
def test_data_check_is_reported_at_its_source_line_without_a_split(check_json, entry):
    filename, needle, code = EXPECTED_DATA_CHECKS[entry]
    (result,) = [r for r in check_json["entrypoints"] if r["entry"] == entry]
    report = result["report"]
    assert report["graph_count"] == 1 and report["breaks"] == []
    line, _ = line_of(EXAMPLES / filename, needle)
    checks = [(c["code"], c["file"], c["line"]) for c in report["data_checks"]]
    assert checks == [(code, str(EXAMPLES / filename), line)]
    # Not a graph break: no warning by default (information, shown with --severity).
    assert not [
        d
        for d in check_json["diagnostics"]
        if (d["path"], d["line"]) == (str(EXAMPLES / filename), line)
    ]


def test_summary_counts_breaks_by_category(check_json):
    summary = check_json["summary"]
    assert summary["breaks"] == 2  # the two prints (print_in_forward, transformer_encoder)
    assert summary["breaks_by_category"] == {"python-side-effect": 2}
    assert summary["failed"] == 0


def test_text_and_sarif_locations():
    text = run_cli("check", "examples", "--no-static", "--no-progress", cwd=REPO, timeout=400)
    assert text.returncode == 1
    line, column = line_of(EXAMPLES / "print_in_forward.py", "print(")
    assert f"examples/print_in_forward.py:{line}:{column + 1}: FG201 " in text.stdout
    assert "examples.clean_mlp:entry: 1 graph, 0 breaks" in text.stdout
    assert "Found 2 graph breaks (python-side-effect: 2)" in text.stdout

    sarif = json.loads(
        run_cli("check", "examples", "--no-static", "--sarif", cwd=REPO, timeout=400).stdout
    )
    run = sarif["runs"][0]
    (result,) = [
        r
        for r in run["results"]
        if r["ruleId"] == "FG201"
        and r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith(
            "print_in_forward.py"
        )
    ]
    physical = result["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"]["uri"] == "examples/print_in_forward.py"
    assert physical["region"]["startLine"] == line
    assert physical["region"]["startColumn"] == column + 1
    innermost = result["stacks"][0]["frames"][0]["location"]["physicalLocation"]
    assert innermost["region"]["startLine"] == line
    assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["name"] == "python-side-effect"


def test_explain_prints_breaks_graphs_guards_and_user_output():
    completed = run_cli("explain", "examples.print_in_forward:entry", cwd=REPO, timeout=300)
    assert completed.returncode == 0, completed.stderr
    out = completed.stdout
    line, column = line_of(EXAMPLES / "print_in_forward.py", "print(")
    assert "Breaks (1)" in out
    assert f"examples/print_in_forward.py:{line}:{column + 1}: FG201 [python-side-effect]" in out
    assert "Graph 0" in out and "Graph 1" in out
    assert "Guard of record 0" in out
    assert "forward: mean activation tensor(" in out  # the program's own output, shown last


def test_explain_json_is_one_schema_valid_report():
    completed = run_cli("explain", "examples.tensor_if:entry", "--json", cwd=REPO, timeout=300)
    assert completed.returncode == 0, completed.stderr
    report = json_output(completed)
    jsonschema.validate(report, json.loads(SCHEMA_PATH.read_text()))
    assert report["function"]["qualname"].endswith("forward")


def test_paths_select_the_configured_entrypoints_under_them():
    completed = run_cli(
        "check", "examples/print_in_forward.py", "--no-static", "--json", cwd=REPO, timeout=300
    )
    document = json_output(completed)
    assert [r["entry"] for r in document["entrypoints"]] == ["examples.print_in_forward:entry"]
    assert completed.returncode == 1  # its break
