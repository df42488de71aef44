"""Issue 2's figures: what a replayed fullgraph record costs per call, and what monitoring costs.

    python bench/overhead.py [--backend inductor] [--repetitions 300] [--json PATH]

1. Per-call overhead on a tiny model (the 2-layer MLP of bench/zoo.py, batch 1):
   the time a call spends outside its compiled graph (for fullgraph: guard +
   mock), for fullgraph and for ``torch.compile`` on the same model, as a
   ratio to one eager call and to each other, next to the full step times.
   The goal is fullgraph's overhead below ``torch.compile``'s.
2. The monitoring run (``fullgraph.runtime.explain``: one observed run, no
   compile) on a mid-size model (BERT from bench/zoo.py, or a torch-only
   encoder when ``transformers`` is missing), relative to one eager call.

Everything is measured in this one run and printed as ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if __package__ in (None, ""):
    sys.path[0] = str(REPO_ROOT)  # see bench/run.py: import `bench` as a package

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch

from bench.compilers import FullgraphRunner, TorchCompileRunner
from bench.graph_timer import outside_graph_seconds
from bench.measure import median, timed_call
from bench.zoo import TINY_CASE, TRANSFORMERS_CASES, ModelCase, ModelInputs

MONITOR_REPETITIONS = 3


class _TorchOnlyEncoder(torch.nn.Module):
    """A mid-size model for machines without transformers: embeddings and four encoder layers."""

    def __init__(self, vocab: int = 1000, width: int = 128, layers: int = 4) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, width)
        self.layers = torch.nn.ModuleList(
            torch.nn.Sequential(
                torch.nn.LayerNorm(width),
                torch.nn.Linear(width, 4 * width),
                torch.nn.GELU(),
                torch.nn.Linear(4 * width, width),
            )
            for _ in range(layers)
        )

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        hidden = self.embed(ids)
        for layer in self.layers:
            hidden = hidden + layer(hidden)
        return hidden


def mid_size_case() -> ModelCase:
    try:
        import transformers  # noqa: F401
    except ImportError:
        torch.manual_seed(0)
        return ModelCase(
            "torch-only encoder",
            "bench/overhead.py",
            lambda: _TorchOnlyEncoder().eval(),
            lambda batch: ModelInputs(args=(torch.randint(0, 1000, (batch, 32)),)),
        )
    return next(case for case in TRANSFORMERS_CASES if case.name == "bert")


def interleaved_medians(
    callables: dict[str, Any], inputs: ModelInputs, repetitions: int
) -> dict[str, float]:
    """Median wall time per callable, the callables taking turns call by call."""
    samples: dict[str, list[float]] = {name: [] for name in callables}
    for _ in range(repetitions):
        for name, fn in callables.items():
            samples[name].append(timed_call(fn, inputs, "cpu")[1])
    return {name: median(values) for name, values in samples.items()}


def _warm(fn: Any, inputs: ModelInputs) -> None:
    for _ in range(5):  # compile, monitor, replay a few times
        fn(*inputs.args, **inputs.kwargs)


def replay_overhead(backend: str, repetitions: int) -> dict[str, Any]:
    model, inputs = TINY_CASE.build(), TINY_CASE.make_inputs(1)
    dynamo, fullgraph = TorchCompileRunner(backend), FullgraphRunner(backend)
    figures: dict[str, Any] = {"model": "2-layer MLP (64-128-64), batch 1", "errors": {}}
    callables = {"eager": model, "torch.compile": dynamo.compile(model)}
    _warm(callables["torch.compile"], inputs)
    absent = fullgraph.unavailable_reason()
    if absent:
        figures["errors"]["fullgraph"] = absent
    else:
        try:
            compiled = fullgraph.compile(model)
            _warm(compiled, inputs)
            callables["fullgraph"] = compiled
            figures["fullgraph_counters"] = FullgraphRunner.counters(compiled)
        except Exception as exc:  # noqa: BLE001 (reported with the figures, not fatal)
            figures["errors"]["fullgraph"] = f"{backend} step: {type(exc).__name__}: {exc}"
    figures["step_s"] = interleaved_medians(callables, inputs, repetitions)
    # The overhead figure needs no compiled kernels: it times what runs around the graph.
    torch._dynamo.reset()
    outside = {}
    for name, runner in (("torch.compile", dynamo), ("fullgraph", fullgraph)):
        if name == "fullgraph" and absent:
            continue
        try:
            outside[name] = outside_graph_seconds(
                runner.compile_with, model, inputs, "cpu", repetitions
            )
        except Exception as exc:  # noqa: BLE001
            figures["errors"][f"{name} overhead"] = f"{type(exc).__name__}: {exc}"
    figures["outside_graph_s"] = outside
    return figures


def monitoring_cost() -> dict[str, Any]:
    case = mid_size_case()
    model, inputs = case.build(), case.make_inputs(1)
    for _ in range(3):
        timed_call(model, inputs, "cpu")
    eager = median(timed_call(model, inputs, "cpu")[1] for _ in range(20))
    figures: dict[str, Any] = {"model": f"{case.name} (batch 1)", "eager_s": eager}
    runtime = FullgraphRunner("eager")
    if runtime.unavailable_reason() is None:
        explain = runtime._runtime().explain
        samples = []
        try:
            for _ in range(MONITOR_REPETITIONS):
                start = time.perf_counter()
                explain(model, *inputs.args, **inputs.kwargs)
                samples.append(time.perf_counter() - start)
        except Exception as exc:  # noqa: BLE001 (reported with the figures, not fatal)
            figures["error"] = f"explain: {type(exc).__name__}: {exc}"
        if samples:
            figures["monitoring_run_s"] = median(samples)
    return figures


def _us(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds * 1e6:.1f} µs"


def _times(numerator: float | None, denominator: float | None) -> str:
    if numerator is None or not denominator:
        return "n/a"
    return f"{numerator / denominator:.2f}×"


def print_figures(replay: dict[str, Any], monitor: dict[str, Any]) -> None:
    steps, outside = replay["step_s"], replay["outside_graph_s"]
    eager = steps["eager"]
    print(f"Replay overhead on a {replay['model']}:")
    print(f"  eager step                 {_us(eager)}")
    for name in ("torch.compile", "fullgraph"):
        if name not in steps and name not in outside:
            print(f"  {name:<26} not available")
            continue
        print(
            f"  {name:<14} step        {_us(steps.get(name))} ({_times(steps.get(name), eager)} eager)"
        )
        print(
            f"  {name:<14} overhead    {_us(outside.get(name))} "
            f"({_times(outside.get(name), eager)} one eager step)"
        )
    print(
        "  fullgraph overhead / torch.compile overhead: "
        f"{_times(outside.get('fullgraph'), outside.get('torch.compile'))} (goal: below 1)"
    )
    for what, error in replay["errors"].items():
        print(f"  ({what} failed: {error})")
    print(f"Monitoring run on {monitor['model']}:")
    print(f"  eager call                 {_us(monitor['eager_s'])}")
    monitoring = monitor.get("monitoring_run_s")
    print(
        f"  monitoring run             {_us(monitoring)} "
        f"({_times(monitoring, monitor['eager_s'])} one eager call)"
    )
    if "error" in monitor:
        print(f"  (monitoring failed: {monitor['error']})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="inductor", help="backend for both compilers")
    parser.add_argument("--repetitions", type=int, default=300, help="timed calls per figure")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch CPU threads (default 1: a batch-1 MLP has no parallel work, and on a "
        "busy machine every OpenMP barrier can stall a µs-scale call for milliseconds)",
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    with torch.no_grad():
        replay = replay_overhead(args.backend, args.repetitions)
        monitor = monitoring_cost()
    print_figures(replay, monitor)
    if args.json:
        args.json.write_text(json.dumps({"replay": replay, "monitoring": monitor}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
