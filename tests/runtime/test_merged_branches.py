"""Data-dependent branches merged into one graph (monitor/branch_exploration.py).

What a user notices: ``if norm > limit:`` in a forward is one graph with a
``torch.cond`` after the first call, whichever way later data goes (one
monitoring run, then replays); the report names the branch as a read merged
into the graph, not as a break; ``merge_branches=False`` keeps the old
graph + mid-guard + graph records; a function whose paths can't merge (a print
on one path, a raise) is recorded as before.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

import fullgraph.runtime as fr


class ClipByNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 6)

    def forward(self, x):
        h = self.fc(x)
        norm = h.norm()
        if norm > 3.0:
            h = h * (3.0 / (norm + 1e-6))
        return torch.tanh(h)


def _inputs():
    torch.manual_seed(0)
    return [s * torch.randn(2, 6) for s in (5.0, 0.01, 5.0, 0.01, 5.0)]


def test_both_paths_replay_one_graph_after_one_monitoring_run():
    torch.manual_seed(0)
    model = ClipByNorm()
    compiled = fr.compile(model, backend="eager")
    for x in _inputs():
        torch.testing.assert_close(compiled(x), model(x), rtol=0, atol=0)
    assert compiled.stats.monitor_runs == 1 and compiled.stats.hits == 4
    (record,) = compiled.records
    assert len(record.graphs) == 1 and record.breaks == []
    assert "torch.ops.higher_order.cond" in record.graph_code
    assert "MISS" not in record.mock_source  # no mid-guard


def test_report_names_the_branch_as_merged_not_as_a_break():
    torch.manual_seed(0)
    report = fr.explain(ClipByNorm(), 5.0 * torch.randn(2, 6)).to_json()
    assert report["graph_count"] == 1 and report["breaks"] == []
    line = ClipByNorm.forward.__code__.co_firstlineno + 3
    assert [(c["code"], c["line"]) for c in report["data_checks"]] == [("FG202", line)]
    assert any("merged into one graph (torch.cond): 2 paths" in n for n in report["notes"])


def test_merge_branches_false_records_each_path_as_it_ran():
    torch.manual_seed(0)
    model = ClipByNorm()
    compiled = fr.compile(model, backend="eager", merge_branches=False)
    for x in _inputs():
        torch.testing.assert_close(compiled(x), model(x), rtol=0, atol=0)
    assert compiled.stats.monitor_runs == 2
    assert all(len(r.graphs) == 2 and "MISS" in r.mock_source for r in compiled.records)


def printing_branch(x):
    h = x * 2
    if h.sum() > 0:
        print("positive")
        h = h + 1
    return h


def test_a_function_with_an_effect_is_not_explored(capsys):
    compiled = fr.compile(printing_branch, backend="eager")
    torch.testing.assert_close(compiled(torch.ones(3)), printing_branch(torch.ones(3)))
    assert capsys.readouterr().out == "positive\npositive\n"  # no path run printed
    (record,) = compiled.records
    assert "cond" not in record.graph_code and "MISS" in record.mock_source


def test_a_path_that_raises_is_not_merged():
    def strict(x):
        if torch.isnan(x).any():
            raise ValueError("nan")
        return x + 1

    compiled = fr.compile(strict, backend="eager")
    assert torch.equal(compiled(torch.ones(2)), torch.full((2,), 2.0))
    assert any("not merged: a path raised ValueError" in n for n in compiled.report().notes)
    with pytest.raises(ValueError, match="nan"):
        compiled(torch.tensor([float("nan")]))


@pytest.mark.inductor
def test_inductor_compiles_the_merged_graph_with_gradients():
    torch.manual_seed(0)
    model = ClipByNorm()
    twin = ClipByNorm()
    twin.load_state_dict(model.state_dict())
    compiled = fr.compile(model, backend="inductor", eager_check=False)
    for x in _inputs():
        compiled(x).sum().backward()
        twin(x).sum().backward()
    torch.testing.assert_close(model.fc.weight.grad, twin.fc.weight.grad)
    assert compiled.stats.monitor_runs == 1 and compiled.stats.hits == 4
    assert len(compiled.records[0].graphs) == 1


def test_a_merged_record_that_fails_to_build_falls_back_to_the_run_as_it_ran(monkeypatch):
    import fullgraph.runtime.compiled as compiled_module

    real_build = compiled_module.build_record

    def failing_for_merged(run, *args, **kwargs):
        if run.unmerged_tape is not None and run.tape is not run.unmerged_tape:
            raise RuntimeError("the backend rejects torch.cond")
        return real_build(run, *args, **kwargs)

    monkeypatch.setattr(compiled_module, "build_record", failing_for_merged)
    torch.manual_seed(0)
    model = ClipByNorm()
    compiled = fr.compile(model, backend="eager")
    for x in _inputs():
        torch.testing.assert_close(compiled(x), model(x), rtol=0, atol=0)
    assert compiled.stats.fallback_reason is None and compiled.stats.hits >= 3
    assert all(len(r.graphs) == 2 for r in compiled.records)  # graph, mid-guard, graph
    report = compiled.report().to_json()
    assert [b["code"] for b in report["breaks"]] == ["FG202"]
    assert any("recording failed" in note for note in report["notes"])


def unsupported_on_the_other_path(x):
    h = x * 2
    if h.sum() > 0:
        return h + 1
    return h.clone().apply_(lambda v: v * 3)  # unobserved per element: never captured


def test_a_path_the_data_does_not_take_leaves_the_real_record_alone():
    compiled = fr.compile(unsupported_on_the_other_path, backend="eager")
    for _ in range(3):
        assert torch.equal(compiled(torch.ones(3)), torch.full((3,), 3.0))
    # The untaken path's refusal was taken back with it: the real run's record replays.
    assert compiled.stats.monitor_runs == 1 and compiled.stats.hits == 2
    report = compiled.report().to_json()
    assert any("not merged" in note for note in report["notes"])
    # No break: the refusal on the untaken path is not the real run's (its read of
    # ``h.sum() > 0`` runs in front of the graph, a data check).
    assert report["breaks"] == [] and len(report["data_checks"]) == 1


def test_another_threads_output_is_heard_while_paths_are_explored(monkeypatch):
    # F301: the untaken path ran with sys.stdout / sys.stderr redirected and warnings
    # recorded process-wide: another thread's prints in that window were lost.
    import io
    import threading
    import warnings

    sink = io.StringIO()
    monkeypatch.setattr("sys.stdout", sink)
    w = torch.randn(64, 64)

    def f(x):
        if x.sum() > 0:  # the other side is explored on the first call
            for _ in range(100):
                x = torch.tanh(x @ w)
            return x
        for _ in range(100):
            x = torch.sigmoid(x @ w)
        return x

    compiled = fr.compile(f, backend="eager")
    stop, started, counts = threading.Event(), threading.Event(), [0, 0]

    def chatter():
        while not stop.is_set():
            print("heartbeat")
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                warnings.warn("tick")
            counts[0] += 1
            counts[1] += len(caught)
            started.set()

    thread = threading.Thread(target=chatter)
    thread.start()
    started.wait()
    for _ in range(3):
        compiled(torch.randn(4, 64))
    stop.set()
    thread.join()
    assert compiled.stats.monitor_runs == 1 and compiled.stats.hits == 2
    assert sink.getvalue().count("heartbeat") == counts[0] > 0
