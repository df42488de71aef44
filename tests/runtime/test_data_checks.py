"""Value reads of input data run as checks in front of the graph (runtime/capture/data_checks.py).

What a user notices: a program that reads its input's data (``if mask.all():``,
``int(lengths.max())``) is one graph, not graph + read + graph; the report
lists the read as a data check at its line; the record still follows the data
(another outcome is another record).  Where the read's tensor needs real work
(a matmul) or something updated it in place first, the read stays where it
was and splits the graph as before.  These are what happens when the paths are
not merged into one graph (``merge_branches=False``; tests/runtime/
test_merged_branches.py covers merging).
"""

from __future__ import annotations

import torch
from torch import nn

import fullgraph.runtime as fr
from fullgraph.lsp_server.analysis.service import AnalysisResult
from fullgraph.lsp_server.cli.check_run import CheckRun


def _ops(gm: torch.fx.GraphModule) -> list[str]:
    return [
        n.target if isinstance(n.target, str) else getattr(n.target, "__name__", str(n.target))
        for n in gm.graph.nodes
        if n.op in ("call_function", "call_method")
    ]


class MaskedScore(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x, mask):
        h = self.fc(x)
        if mask.bool().all():  # nothing padded: skip the mask
            return h.softmax(-1)
        return h.masked_fill(~mask.bool(), -1e9).softmax(-1)


def test_read_of_an_input_mask_runs_in_front_of_one_graph():
    model = MaskedScore()
    compiled = fr.compile(model, backend="eager", merge_branches=False)
    full = torch.ones(2, 4, dtype=torch.long)
    x = torch.randn(2, 4)
    torch.testing.assert_close(compiled(x, full), model(x, full))
    (record,) = compiled.records
    assert len(record.graphs) == 1 and record.breaks == []
    assert "h0 = check0(" in record.mock_source
    assert [c.function for c in record.data_checks] == ["Tensor.__bool__"]
    # The read's slice runs in the check graph only: the main graph has no all().
    assert "all" not in _ops(record.graphs[0])
    assert _ops(record.check_graphs["check0"]) == ["bool", "all"]
    report = compiled.report().to_json()
    assert report["graph_count"] == 1 and report["breaks"] == []
    assert [c["line"] for c in report["data_checks"]] == [record.data_checks[0].line]

    padded = full.clone()
    padded[1, 2:] = 0
    for mask in (padded, full, padded, full):
        x = torch.randn(2, 4)
        torch.testing.assert_close(compiled(x, mask), model(x, mask))
    assert compiled.stats.monitor_runs == 2  # one record per path, each replayed
    assert compiled.stats.hits == 3


class ScoreAfterLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        if h.mean() > 0:  # needs the matmul: recomputing it in front would cost a matmul
            return h * 2
        return h


def test_read_that_needs_real_work_still_splits():
    compiled = fr.compile(ScoreAfterLinear(), backend="eager", merge_branches=False)
    compiled(torch.randn(3, 4))
    (record,) = compiled.records
    assert len(record.graphs) == 2 and len(record.breaks) == 1
    assert record.data_checks == [] and "check0" not in record.mock_source


def updated_then_read(x):
    y = x + 0
    y.sub_(1.0)  # the read must see this update
    if (y > 0).all():
        return y * 2
    return y


def test_read_of_a_tensor_updated_in_place_before_it_still_splits():
    compiled = fr.compile(updated_then_read, backend="eager", merge_branches=False)
    for x in (torch.full((3,), 2.0), torch.full((3,), 0.5), torch.full((3,), 2.0)):
        torch.testing.assert_close(compiled(x.clone()), updated_then_read(x.clone()))
    assert all(len(r.graphs) == 2 and r.data_checks == [] for r in compiled.records)


def drops_then_reads(x):
    keep = torch.rand(x.shape) > 0.5
    if keep.any():
        return x * keep
    return x


def test_random_draws_before_a_missed_mid_guard_are_not_drawn_twice():
    compiled = fr.compile(drops_then_reads, backend="eager")
    for seed in range(8):
        torch.manual_seed(seed)
        expected = drops_then_reads(torch.ones(1))
        after_eager = torch.get_rng_state()
        torch.manual_seed(seed)
        actual = compiled(torch.ones(1))
        torch.testing.assert_close(actual, expected)
        assert torch.equal(torch.get_rng_state(), after_eager), seed
    record = compiled.records[0]
    assert "rng = rng_state()" in record.mock_source
    assert record.data_checks == []  # a random op is never copied in front


def test_editor_shows_data_checks_as_information_only_when_asked():
    check = {
        "code": "FG202",
        "file": "/abs/model.py",
        "line": 7,
        "column": 4,
        "message": "Checked in front of the graph (no split): Tensor.__bool__",
    }
    result = AnalysisResult("model:entry", "ok", report={"breaks": [], "data_checks": [check]})
    default = CheckRun(root=".", results=[result])
    assert default.diagnostics() == []
    verbose = CheckRun(root=".", results=[result], min_severity="information")
    (diagnostic,) = verbose.diagnostics()
    assert (diagnostic.severity, diagnostic.line, diagnostic.code) == ("information", 7, "FG202")
    assert verbose.summary()["breaks"] == 0


def nested_reads(x, mask):
    any_set = mask.any()
    if any_set:  # a read whose slice is part of the next one's
        if (any_set & mask.all()).item():
            return x * 3
        return x * 2
    return x


def test_reads_whose_slices_overlap_share_one_graph():
    compiled = fr.compile(nested_reads, backend="eager")
    masks = [torch.tensor([True, True]), torch.tensor([True, False]), torch.tensor([False, False])]
    for mask in masks + masks:
        x = torch.randn(2)
        torch.testing.assert_close(compiled(x, mask), nested_reads(x, mask))
    assert compiled.stats.monitor_runs == 3 and compiled.stats.hits == 3
    assert all(len(r.data_checks) >= 1 and len(r.graphs) == 1 for r in compiled.records)
