"""Dynamism (issue 3): breaks split records, mid-guards make one record per path,
varying scalars are lifted, counters are replayed, and a keep-missing function
falls back to eager with the reason in its stats."""

from __future__ import annotations

import contextlib
import io
import random

import pytest
import torch
from torch import nn

import fullgraph.runtime as fr


class ItemGate(nn.Module):
    """A model that branches on a Python float read from tensor data."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.threshold = 0.0

    def forward(self, x):
        h = self.fc(x)
        if h.mean().item() > self.threshold:
            return h * 2
        return h - 1


def test_alternating_branches_are_each_monitored_once():
    model = ItemGate()
    compiled = fr.compile(model, backend="eager")
    for i in range(8):
        x = torch.randn(3, 4) + (3.0 if i % 2 else -3.0)  # the branch alternates
        torch.testing.assert_close(compiled(x), model(x))
    # Two paths, each monitored once; every other call replays a record whose
    # mid-guard checks the branch outcome, not the float's exact value.
    assert (compiled.stats.monitor_runs, compiled.stats.hits) == (2, 6)
    mocks = "\n".join(r.mock_source for r in compiled.records)
    assert "return MISS" in mocks and "> 0.0" in mocks


def scaled(x, scale):
    return x * scale + 1


def test_a_varying_float_argument_is_lifted_after_it_changes():
    compiled = fr.compile(scaled, backend="eager")
    for scale in (0.5, 1.5, 2.5, 3.5, 4.5):
        x = torch.randn(3)
        torch.testing.assert_close(compiled(x, scale), scaled(x, scale))
    # The first record guarded 0.5; the miss on 1.5 made the argument symbolic.
    assert compiled.stats.monitor_runs == 2
    assert compiled.stats.hits == 3
    assert "torch.tensor(A[1], dtype=torch.float64)" in compiled.records[0].mock_source
    assert "type(v_A_1) is float" in compiled.records[0].guard_source


class CallCounter(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x * self.calls


def test_a_python_counter_is_replayed_as_an_expression():
    model, eager = CallCounter(), CallCounter()
    compiled = fr.compile(model, backend="eager")
    for call in range(1, 6):
        x = torch.randn(3)
        torch.testing.assert_close(compiled(x), eager(x))
        assert model.calls == eager.calls == call
    assert compiled.stats.monitor_runs == 2


def prints_shape(x):
    y = x.relu()
    print("shape", tuple(y.shape))
    return y * 2


def test_a_print_of_plain_values_is_made_after_one_graph_once_per_call():
    compiled = fr.compile(prints_shape, backend="eager")
    for _ in range(3):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            compiled(torch.randn(2, 3))
        assert out.getvalue() == "shape (2, 3)\n"
    assert compiled.stats.hits == 2
    report = fr.explain(prints_shape, torch.randn(2, 3))
    assert report.graph_count == 1 and report.breaks == []
    (only,) = report.deferred_effects
    assert (only.category.code, only.function, only.line) == (
        "FG201",
        "builtins.print",
        prints_shape.__code__.co_firstlineno + 2,
    )


def prints_values(x):
    y = x.relu()
    print("values", y)  # shows what the graph computed so far: the graph ends here
    y.mul_(2)
    return y


def test_a_print_of_a_tensor_splits_the_graph_and_shows_its_value_then():
    compiled = fr.compile(prints_values, backend="eager")
    for _ in range(3):
        x = torch.tensor([1.0, -2.0])
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            torch.testing.assert_close(compiled(x), torch.tensor([2.0, 0.0]))
        assert out.getvalue() == "values tensor([1., 0.])\n"
    assert compiled.stats.hits == 2
    report = fr.explain(prints_values, torch.ones(2))
    assert report.graph_count == 2 and [b.category.code for b in report.breaks] == ["FG201"]


def logs_loss(x):
    loss = (x * x).mean()
    print(f"loss={loss.item():.4f}")
    return loss


def test_a_tensor_value_in_a_printed_message_is_recomputed_each_call():
    compiled = fr.compile(logs_loss, backend="eager")
    for _ in range(3):
        x = torch.randn(5)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            loss = compiled(x)
        assert out.getvalue() == f"loss={(x * x).mean().item():.4f}\n"
        torch.testing.assert_close(loss, (x * x).mean())
    assert compiled.stats.monitor_runs == 1


def masked_sum(x):
    return x[x > 0].sum() * 2


def test_a_data_dependent_shape_stays_in_the_graph_and_results_stay_right():
    compiled = fr.compile(masked_sum, backend="eager")
    for _ in range(4):
        x = torch.randn(16)
        torch.testing.assert_close(compiled(x), masked_sum(x))
    assert compiled.stats.monitor_runs == 1 and compiled.stats.hits == 3
    report = fr.explain(masked_sum, torch.randn(16))
    assert report.breaks == [] and len(report.graphs) == 1


def rows_per_call(x):
    rows = x[x > 0]
    return rows.sum(), rows.shape[0]


def test_python_reading_a_data_dependent_size_makes_the_op_a_break():
    report = fr.explain(rows_per_call, torch.randn(16))
    assert [b.category.code for b in report.breaks] == ["FG203"]  # at the size read
    assert "Python reads a size that depends on data" in report.notes[0]
    compiled = fr.compile(rows_per_call, backend="eager")
    for _ in range(5):
        x = torch.randn(16)
        assert compiled(x)[1] == rows_per_call(x)[1]
    assert compiled.stats.hits >= 2


NAME = {"value": "relu"}


def named(x):
    return getattr(torch, NAME["value"])(x)


def test_a_function_that_keeps_missing_falls_back_to_eager_with_a_reason():
    compiled = fr.compile(named, backend="eager", recompile_limit=2)
    for name in ("relu", "tanh", "sigmoid", "sigmoid"):
        NAME["value"] = name
        x = torch.randn(3)
        torch.testing.assert_close(compiled(x), getattr(torch, name)(x))
    stats = compiled.stats
    assert "recompile limit" in stats.monitoring_stopped and "FG206" in stats.monitoring_stopped
    assert stats.fallbacks == 2 and stats.monitor_runs == 2
    NAME["value"] = "relu"  # a call a record accepts still replays
    x = torch.randn(3)
    torch.testing.assert_close(compiled(x), torch.relu(x))
    assert stats.hits >= 1 and stats.monitor_runs == 2


def test_a_user_exception_in_the_monitored_run_is_reported_not_raised_by_explain():
    def broken(x):
        raise ValueError("bad input")

    report = fr.explain(broken, torch.randn(2))
    assert report.status == "user_exception"
    assert report.error["type"] == "ValueError" and "bad input" in report.error["message"]


@pytest.mark.parametrize("version", [(3, 10), (3, 14), (3, 15)])
def test_other_python_versions_are_refused_clearly(version):
    with pytest.raises(fr.UnsupportedPythonError, match="supports Python 3.11, 3.12, 3.13"):
        fr.check_supported(version)


RNG = random.Random(0)


def maybe_flip(x):
    if RNG.random() < 0.5:
        return x.flip(-1) * 2
    return x * 2


def test_a_draw_before_a_mid_guard_happens_exactly_once_per_call():
    # The draw decides the branch; a replay whose mid-guard misses hands the
    # value it drew to the monitoring run instead of drawing a second time.
    RNG.seed(0)
    reference = random.Random(0)
    compiled = fr.compile(maybe_flip, backend="eager")
    for call in range(1, 9):
        x = torch.randn(4)
        expected = x.flip(-1) * 2 if reference.random() < 0.5 else x * 2
        torch.testing.assert_close(compiled(x), expected)
        assert RNG.getstate() == reference.getstate(), f"call {call}: one draw per call"
    assert compiled.stats.monitor_runs == 2  # one per branch


REGISTRY = {"sdpa": 1}


def not_in_registry(x):
    if "eager" not in REGISTRY:
        return x + 1
    return x - 1


def test_a_not_in_test_on_an_external_dict_is_guarded_the_right_way_round():
    compiled = fr.compile(not_in_registry, backend="eager")
    for _ in range(3):
        x = torch.randn(2)
        torch.testing.assert_close(compiled(x), x + 1)
    assert compiled.stats.hits == 2
    REGISTRY["eager"] = 2
    try:
        x = torch.randn(2)
        torch.testing.assert_close(compiled(x), x - 1)
    finally:
        del REGISTRY["eager"]


def test_a_varying_batch_size_compiles_one_size_generic_record():
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    compiled = fr.compile(model, backend="eager")
    for batch in (2, 3, 5, 7, 9, 2):
        x = torch.randn(batch, 16)
        torch.testing.assert_close(compiled(x), model(x))
    # The second size made the input's batch dimension dynamic; no Python code
    # looked at a size, so one record serves every batch size from then on.
    assert compiled.stats.monitor_runs == 2
    assert compiled.records[0].dynamic_shapes
    assert "v_A_0.shape[1] == 16" in compiled.records[0].guard_source


@pytest.mark.inductor
def test_a_varying_batch_size_with_inductor():
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    compiled = fr.compile(model, backend="inductor")
    for batch in (2, 3, 5, 7):
        x = torch.randn(batch, 16)
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
    assert compiled.stats.monitor_runs == 2


def prints_a_list_of_values(x):
    y = x.relu()
    print("values", [y, y.sum()])  # a list holding tensors: still as they were then
    y.mul_(2)
    return y


def test_tensors_inside_a_printed_list_show_their_value_then():
    compiled = fr.compile(prints_a_list_of_values, backend="eager")
    for _ in range(3):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            compiled(torch.tensor([1.0, -2.0]))
        assert out.getvalue() == "values [tensor([1., 0.]), tensor(1.)]\n"
    assert compiled.stats.hits == 2 and compiled.stats.rerun_after_error == 0
