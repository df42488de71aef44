"""Time spent outside the compiled graphs of a call: guards, mocks, wrappers, callouts.

A compiler's per-call overhead is the part of a step that is not the operator
graph.  Both compilers accept a backend with the ``torch.compile`` signature,
so the benchmark hands them one that runs each captured graph directly and
clocks it; the rest of the call's wall time is the overhead.  This needs no
counters inside either compiler and measures both the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch

from bench.measure import median, synchronize, timed_call
from bench.zoo import ModelInputs


class GraphTimer:
    """A backend that runs graphs uncompiled and accumulates the time spent inside them."""

    def __init__(self, device: str) -> None:
        self.device = device
        self.seconds = 0.0
        self.graph_calls = 0

    def backend(self, graph: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        def run_graph(*args: Any) -> Any:
            synchronize(self.device)
            start = time.perf_counter()
            try:
                return graph(*args)
            finally:
                synchronize(self.device)
                self.seconds += time.perf_counter() - start
                self.graph_calls += 1

        return run_graph


def outside_graph_seconds(
    compile_with: Callable[[Any, Any], Callable[..., Any]],
    model: Callable[..., Any],
    inputs: ModelInputs,
    device: str,
    calls: int,
    warmup: int = 3,
) -> float | None:
    """Median per-call time outside the graphs, or None when no graph ran in steady state."""
    timer = GraphTimer(device)
    compiled = compile_with(model, timer.backend)
    for _ in range(warmup):
        compiled(*inputs.args, **inputs.kwargs)
    graph_calls_before = timer.graph_calls
    samples = []
    for _ in range(calls):
        inside_before = timer.seconds
        _, total = timed_call(compiled, inputs, device)
        samples.append(max(0.0, total - (timer.seconds - inside_before)))
    if timer.graph_calls == graph_calls_before:
        return None  # the compiler fell back to running the model without its graphs
    return median(samples)
