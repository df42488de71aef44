"""``bench/coverage.py --section capture`` end to end on one program per category of #17.

The section compares fullgraph and Dynamo on ``bench/capture_programs``; this
runs it as a user would (the CLI, its JSON) on five programs and checks the
table has a row per category, that the per-program cells are filled for both
systems, and that fullgraph gives no wrong output and does not crash.
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest
import torch

from bench import coverage

# One per category: a case fullgraph captures today where one exists, so a regression shows.
ONE_PER_CATEGORY = (
    "autograd_gradient_reversal",  # GRADIENTS: the user's backward must give the gradients
    "legacy_variable_requires_grad",
    "rnn_lstm_classifier",
    "branch_masked_loss",  # seed 1 takes the other path
    "dynshape_masked_mean",
)


@pytest.fixture(scope="module")
def capture_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("capture") / "capture.json"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = coverage.main(
            ["--section", "capture", "--only", *ONE_PER_CATEGORY, "--json", str(out)]
        )
    assert code == 0
    return json.loads(out.read_text())["capture"], printed.getvalue()


def test_one_summary_row_per_category_and_a_total(capture_run):
    figures, printed = capture_run
    summary = figures["summary"]
    assert list(summary) == ["autograd", "legacy", "rnn", "branch", "dynshape", "total"]
    assert all(summary[key]["programs"] == 1 for key in list(summary)[:-1])
    assert summary["total"]["programs"] == len(ONE_PER_CATEGORY)
    for name in ONE_PER_CATEGORY:
        assert name in printed


def test_fullgraph_gives_no_wrong_output_and_does_not_crash(capture_run):
    figures, printed = capture_run
    assert "WRONG OUTPUT fullgraph" not in printed
    for row in figures["rows"]:
        fullgraph = row["fullgraph"]
        assert fullgraph["wrong"] == [], (row["name"], fullgraph["wrong"])
        assert fullgraph["error"] is None and fullgraph["explain_error"] is None, row
        assert fullgraph["calls_equal"] == 3, row
    assert figures["summary"]["total"]["fullgraph_wrong_programs"] == 0


def test_both_systems_are_measured_in_the_same_run(capture_run):
    figures, _ = capture_run
    rows = {row["name"]: row for row in figures["rows"]}
    assert list(rows) == list(ONE_PER_CATEGORY)
    for row in rows.values():
        assert row["fullgraph"]["graphs"] is not None
        assert row["dynamo"]["graphs"] is not None or row["dynamo"]["explain_error"]
    # Python-level dynamism that Dynamo rejects: fullgraph keeps one graph.
    assert rows["legacy_variable_requires_grad"]["fullgraph"]["graphs"] == 1
    assert rows["legacy_variable_requires_grad"]["fullgraph"]["breaks"] == 0
    assert rows["legacy_variable_requires_grad"]["dynamo"]["error"] is not None
    # A branch on data: both paths merged into one graph (torch.cond), one monitoring run.
    merged = rows["branch_masked_loss"]["fullgraph"]
    assert (merged["graphs"], merged["breaks"], merged["monitor_runs"]) == (1, 0, 1)


def test_every_program_has_a_category_and_is_deterministic_eagerly():
    programs = coverage.capture_section.capture_programs
    names = programs.program_names()
    by_category = {
        key: [n for n in names if programs.category(n) == key] for key in programs.CATEGORIES
    }
    assert all(len(found) >= 3 for found in by_category.values()), by_category
    for name in names:
        program = programs.load_program(name)
        assert program.EXPECTED_GRAPHS == 1, name
        for seed in (0, 1):
            first = program.make_model()(*program.make_inputs(seed))
            again = program.make_model()(*program.make_inputs(seed))
            torch.testing.assert_close(first, again, msg=lambda m, name=name: f"{name}: {m}")
