"""The ordering backport for torch before 2.13 (runtime/inductor_random_order.py).

The differential cases are in tests/soundness/test_47_random_draw_order.py; these
check that the wrapped pass leaves compiles without ``fallback_random`` alone.
"""

from __future__ import annotations

import operator

import pytest
import torch

from fullgraph.runtime import inductor_random_order


def _two_draws_returned_in_reverse() -> torch.fx.Graph:
    graph = torch.fx.Graph()
    a = graph.call_function(torch.ops.aten.randn.default, ([4],))
    w = graph.call_function(torch.ops.aten.randn.default, ([4],))
    total = graph.call_function(torch.ops.aten.add.Tensor, (w, a))
    graph.output((graph.call_function(operator.neg, (w,)), total))
    return graph


def _draw_order(graph: torch.fx.Graph) -> list[str]:
    return [n.name for n in graph.nodes if n.target is torch.ops.aten.randn.default]


def test_options_ask_for_eager_random_numbers():
    assert inductor_random_order.options(False) == {"fallback_random": True}
    chosen = inductor_random_order.options(True)
    assert chosen["fallback_random"] is True
    # On a torch that reorders draws, a drawing graph's options differ (its cache key).
    assert ("reorder_for_locality" in chosen) == inductor_random_order.needed()


@pytest.mark.skipif(
    not inductor_random_order.needed(), reason="this torch keeps draws in order itself"
)
def test_the_locality_pass_keeps_draws_only_under_fallback_random():
    from torch._inductor import config
    from torch._inductor.fx_passes import post_grad

    assert inductor_random_order.install() is True
    with config.patch(fallback_random=True):
        graph = _two_draws_returned_in_reverse()
        post_grad.reorder_for_locality(graph)
        assert _draw_order(graph) == ["randn_default", "randn_default_1"]
    with config.patch(fallback_random=False):
        graph = _two_draws_returned_in_reverse()
        before = [n.name for n in graph.nodes]
        post_grad.reorder_for_locality(graph)
        assert [n.name for n in graph.nodes] != before  # the pass itself still runs
