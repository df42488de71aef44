"""Where a model's step time goes, per compiler: the evidence behind a missed target.

    python bench/profile_model.py bert [--batch 8] [--backend inductor] [--top 12]

Compiles the model with ``torch.compile`` and fullgraph, warms both up, then
runs a few steps of each (and of eager) under the torch profiler and prints
the ops that take the most self time, plus the share of the step spent
outside any op (Python: guards, mocks, wrappers, module calls).  This is
how the closing note of docs/benchmarks.md explains a miss.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if __package__ in (None, ""):
    sys.path[0] = str(REPO_ROOT)  # see bench/run.py: import `bench` as a package

import torch
from torch.profiler import ProfilerActivity, profile

from bench.compilers import make_runners
from bench.local_models import corpus_cases, example_cases
from bench.zoo import TINY_CASE, TRANSFORMERS_CASES, ModelCase

PROFILED_STEPS = 10


def find_case(name: str) -> ModelCase:
    for case in (TINY_CASE, *TRANSFORMERS_CASES, *example_cases(), *corpus_cases()):
        if case.name == name:
            return case
    raise SystemExit(f"no model named {name!r}")


def profile_steps(fn, inputs, top: int) -> None:
    for _ in range(3):
        fn(*inputs.args, **inputs.kwargs)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        start = time.perf_counter()
        for _ in range(PROFILED_STEPS):
            fn(*inputs.args, **inputs.kwargs)
        wall = (time.perf_counter() - start) / PROFILED_STEPS
    averages = prof.key_averages()
    # Top-level ops only: their self times plus children add up to time spent in ops.
    in_ops = sum(e.cpu_time_total for e in prof.events() if e.cpu_parent is None) / 1e6
    in_ops /= PROFILED_STEPS
    print(f"  step {wall * 1e3:.3f} ms; in ops {in_ops * 1e3:.3f} ms; "
          f"outside ops {max(0.0, wall - in_ops) * 1e3:.3f} ms "
          f"({max(0.0, wall - in_ops) / wall:.0%})")  # fmt: skip
    print(averages.table(sort_by="self_cpu_time_total", row_limit=top, max_name_column_width=60))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--backend", default="inductor")
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads or torch.get_num_threads())  # see bench/run.py
    case = find_case(args.model)
    model, inputs = case.build(), case.make_inputs(args.batch)
    with torch.no_grad():
        for runner in make_runners(args.backend):
            reason = runner.unavailable_reason()
            print(f"== {runner.name} ({case.name}, inputs {args.batch}, {args.backend})")
            if reason:
                print(f"  not available: {reason}")
                continue
            try:
                profile_steps(runner.compile(model), inputs, args.top)
            except Exception as exc:  # noqa: BLE001 (a failing compiler is reported, not fatal)
                print(f"  failed: {type(exc).__name__}: {exc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
