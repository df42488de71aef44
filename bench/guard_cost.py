"""What a replay's guard costs per call, natively and as Python, on the transformers models.

    python bench/guard_cost.py [--batch 1] [--repetitions 300] [--models bert,gpt2] [--json PATH]

For each model: capture one record (``eager`` backend: the guard does not
depend on the backend), then time, interleaved in one loop, the guard the
record runs (torch's native guard managers plus the Python rest), the
Python rendering of the same checks that a user prints, and the guard
Dynamo builds for the same model (``torch.compile``, its cache entry's guard
manager checked on the frame's locals: the anchor), next to one eager step
of the model at the same inputs.  Interleaving leaves the CPU caches as a
real step leaves them for the next call's guard.  Figures are medians, reported as
microseconds and as a share of the eager step (issue #15's target: guard and
mock together ≤ 2% of a batch-1 step).
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

from bench.measure import median
from bench.zoo import TRANSFORMERS_CASES
from fullgraph.runtime import compile as fg_compile
from fullgraph.runtime.record.codegen import compile_source


def _clock(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def dynamo_guard(model: Any, args: tuple, kwargs: dict) -> Any:
    """A callable checking Dynamo's guard for ``model`` on these inputs (None: not found)."""
    import inspect

    from torch._dynamo.eval_frame import _debug_get_cache_entry_list

    torch._dynamo.reset()
    torch.compile(model, backend="eager")(*args, **kwargs)
    forward = type(model).forward
    entries = _debug_get_cache_entry_list(forward.__code__)
    if len(entries) != 1:
        return None
    bound = inspect.signature(forward, follow_wrapped=False).bind(model, *args, **kwargs)
    bound.apply_defaults()
    frame = dict(bound.arguments)  # the compiled frame's locals, free variables included
    for name, cell in zip(forward.__code__.co_freevars, forward.__closure__ or ()):
        frame[name] = cell.cell_contents
    manager = entries[0].guard_manager
    return (lambda: manager.check(frame)) if manager.check(frame) else None


def measure(case: Any, batch: int, repetitions: int) -> dict[str, Any]:
    model = case.build().eval()
    inputs = case.make_inputs(batch)
    args, kwargs = inputs.args, inputs.kwargs
    with torch.no_grad():
        compiled = fg_compile(model, backend="eager", eager_check=False)
        for _ in range(3):
            compiled(*args, **kwargs)
        record = compiled.records[0]
        fn = compiled._root_function()
        frame = (args, kwargs, compiled.module, fn)
        python = compile_source(
            record.guard_source, record.guard_namespace, "guard", "<bench python guard>"
        )
        runs = {
            "native": lambda: record.guard(*frame),
            "python": lambda: python(*frame),
            "eager": lambda: model(*args, **kwargs),
        }
        try:
            dynamo = dynamo_guard(model, args, kwargs)
        except Exception:  # noqa: BLE001 - the anchor is optional
            dynamo = None
        if dynamo is not None:
            runs["dynamo"] = dynamo
        samples: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(repetitions):
            for name, run in runs.items():
                samples[name].append(_clock(run))
    times = {name: median(values) for name, values in samples.items()}
    return {
        "model": case.name,
        "batch": batch,
        "checks": record.check_count,
        "native_checks": record.native_checks,
        "native_us": times["native"] * 1e6,
        "python_us": times["python"] * 1e6,
        "eager_step_us": times["eager"] * 1e6,
        "dynamo_us": times["dynamo"] * 1e6 if "dynamo" in times else None,
        "native_share": times["native"] / times["eager"],
        "python_share": times["python"] / times["eager"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--repetitions", type=int, default=300)
    parser.add_argument("--models", default="", help="comma-separated names (default: all)")
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    torch.set_num_threads(1)
    wanted = {name for name in options.models.split(",") if name}
    rows = [
        measure(case, options.batch, options.repetitions)
        for case in TRANSFORMERS_CASES
        if not wanted or case.name in wanted
    ]
    print(
        f"{'model':12} {'checks':>6} {'native':>6} {'native µs':>10} {'Python µs':>10} "
        f"{'Dynamo µs':>10} {'eager µs':>9} {'native share':>13}"
    )
    for row in rows:
        dynamo = "n/a" if row["dynamo_us"] is None else f"{row['dynamo_us']:.1f}"
        print(
            f"{row['model']:12} {row['checks']:6d} {row['native_checks']:6d} "
            f"{row['native_us']:10.1f} {row['python_us']:10.1f} {dynamo:>10} "
            f"{row['eager_step_us']:9.0f} {row['native_share']:12.1%}"
        )
    if options.json:
        options.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
