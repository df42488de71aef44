"""``torch.cond`` (hand-written, or from the FG101 quick fix) is captured as one graph.

Eager ``torch.cond`` would compile its branches with Dynamo; the monitor
captures them as subgraphs of one ``torch.ops.higher_order.cond`` node, so the
branch decision moves into the graph: no break, one monitoring run for calls
that take either branch, outputs equal to eager.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

import fullgraph.runtime as fr


class Switch(nn.Module):
    """Each branch calls a submodule (so torch.where could not predicate it)."""

    def __init__(self):
        super().__init__()
        self.up = nn.Linear(8, 8)
        self.down = nn.Linear(8, 8)
        self.alpha = 2.0

    def forward(self, x):
        h = x * 1.5

        def grow(h):
            return self.up(h) * self.alpha

        def shrink(h):
            return torch.relu(self.down(h))

        return torch.cond(h.sum() > 0, grow, shrink, (h,)) + 1


def _signed(sign: float) -> torch.Tensor:
    return torch.randn(4, 8).abs() * sign + sign


def test_both_branches_are_one_graph_and_one_monitoring_run():
    model = Switch()
    compiled = fr.compile(model, backend="eager")
    for call in range(6):
        x = _signed(1.0 if call % 2 else -1.0)
        torch.testing.assert_close(compiled(x), model(x))
    assert (compiled.stats.monitor_runs, compiled.stats.hits) == (1, 5)
    report = fr.explain(model, _signed(1.0))
    assert report.breaks == []
    (graph,) = report.graphs
    assert graph["op_counts"]["cond"] == 1
    # The submodules' parameters are graph inputs, not constants baked into the branches.
    assert "v_m_up_weight" in graph["inputs"] and "v_m_down_weight" in graph["inputs"]


def test_training_through_the_captured_cond_gives_eager_gradients():
    model = Switch()
    twin = Switch()
    twin.load_state_dict(model.state_dict())
    compiled = fr.compile(model, backend="eager")
    for sign in (1.0, -1.0, 1.0):
        x = _signed(sign)
        compiled(x).sum().backward()
        twin(x).sum().backward()
    for ours, theirs in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(ours.grad, theirs.grad)
    assert compiled.stats.monitor_runs == 1


def test_a_number_the_branch_reads_that_changes_is_lifted():
    model = Switch()
    compiled = fr.compile(model, backend="eager")
    for alpha in (2.0, 3.0, 4.0, 5.0):
        model.alpha = alpha
        x = _signed(1.0)
        torch.testing.assert_close(compiled(x), model(x))
    # The first change re-monitors and lifts alpha; later values reuse that record.
    assert compiled.stats.monitor_runs == 2


def test_branches_of_different_shapes_behave_as_in_eager():
    def mismatched(x):
        return torch.cond(x.sum() > 0, lambda a: a * 2, lambda a: a[:2], (x,))

    compiled = fr.compile(mismatched, backend="eager")
    x = torch.randn(4)
    with pytest.raises(Exception) as ours:
        compiled(x)
    with pytest.raises(Exception) as eager:
        mismatched(x)
    assert type(ours.value) is type(eager.value)
    report = fr.explain(mismatched, x)
    assert report.error["type"] == type(eager.value).__name__
    expected = (
        "torch.cond not captured: the branches return tensors of different metadata: "
        "(4,) torch.float32 vs (2,) torch.float32"
    )
    assert [b.detail for b in report.breaks] == [expected]


def test_a_python_predicate_just_picks_a_branch():
    def pick(x, flag: bool):
        return torch.cond(flag, lambda a: a + 1, lambda a: a - 1, (x,))

    compiled = fr.compile(pick, backend="eager")
    x = torch.randn(3)
    for flag in (True, False, True):
        torch.testing.assert_close(compiled(x, flag), pick(x, flag))
    assert compiled.stats.monitor_runs == 2  # one per flag value: the predicate is guarded


@pytest.mark.inductor
def test_inductor_compiles_the_cond_node(inductor_tolerance):
    model = Switch()
    compiled = fr.compile(model, backend="inductor")
    for call in range(4):
        x = _signed(1.0 if call % 2 else -1.0)
        torch.testing.assert_close(compiled(x), model(x), **inductor_tolerance)
    assert (compiled.stats.monitor_runs, compiled.stats.hits) == (1, 3)


def test_the_standalone_wrapper_carries_the_branch_graphs(tmp_path, monkeypatch):
    (tmp_path / "cond_target.py").write_text(
        "import torch\n\n"
        "def gate(x, w):\n"
        "    return torch.cond(x.sum() > 0, lambda a, b: a @ b, lambda a, b: a - b, (x, w))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import cond_target

    w = torch.randn(3, 3)
    source = fr.generate_wrapper(cond_target.gate, torch.randn(3, 3), w)
    assert "class Graph0_cond_true_0(torch.nn.Module)" in source
    (tmp_path / "cond_wrapper.py").write_text(source)
    import cond_wrapper

    for sign in (1.0, -1.0):
        x = torch.randn(3, 3).abs() * sign + sign
        torch.testing.assert_close(cond_wrapper.compiled(x, w), cond_target.gate(x, w))
