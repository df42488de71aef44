"""Capture and replay on the transformers models: graphs, breaks, guard checks, replays.

For each model of ``bench/zoo.py`` (random weights, small configs), one
process compiles it with the eager backend, calls it several times with
fresh inputs of one size, and compares every output with eager.  Prints one
line per model: graphs with ops in the latest record, distinct breaks,
monitoring runs, replays, guard checks, and whether every output matched.
Used to compare the runtime before and after a change (run it once with
``PYTHONPATH`` pointing at the other checkout).

    .venv/bin/python bench/capture_check.py [--calls 4] [MODEL ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.zoo import TRANSFORMERS_CASES


def _leaves(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, dict) or hasattr(value, "to_tuple"):
        for item in value.values() if isinstance(value, dict) else value.to_tuple():
            yield from _leaves(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _leaves(item)


def _same(a, b) -> bool:
    left, right = list(_leaves(a)), list(_leaves(b))
    return len(left) == len(right) and all(
        x.shape == y.shape and torch.allclose(x, y, atol=1e-4, rtol=1e-4, equal_nan=True)
        for x, y in zip(left, right)
    )


def check(case, calls: int) -> dict:
    import fullgraph.runtime as fr

    torch.manual_seed(0)
    model = case.build()
    compiled = fr.compile(model, backend="eager")
    matched = True
    with torch.no_grad():
        for call in range(calls):
            inputs = case.make_inputs(2 + 0 * call)
            torch.manual_seed(call)
            expected = model(*inputs.args, **inputs.kwargs)
            torch.manual_seed(call)
            actual = compiled(*inputs.args, **inputs.kwargs)
            matched = matched and _same(expected, actual)
    record = compiled.records[0] if compiled.records else None
    report = compiled.report()
    graphs = 0
    if record is not None:
        graphs = sum(
            1
            for gm in record.graphs
            if any(n.op in ("call_function", "call_method") for n in gm.graph.nodes)
        )
    return {
        "model": case.name,
        "graphs": graphs,
        "breaks": len(report.breaks) if report else None,
        "monitor_runs": compiled.stats.monitor_runs,
        "hits": compiled.stats.hits,
        "calls": calls,
        "guard_checks": record.check_count if record else 0,
        "matches_eager": matched,
        "fallback": compiled.stats.fallback_reason
        or getattr(compiled.stats, "unrecorded_reason", None),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*")
    parser.add_argument("--calls", type=int, default=4)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    for case in TRANSFORMERS_CASES:
        if options.models and case.name not in options.models:
            continue
        try:
            row = check(case, options.calls)
        except Exception as error:  # noqa: BLE001 - one model's failure is a row
            row = {"model": case.name, "error": repr(error)[:300]}
        print(json.dumps(row) if options.json else row, flush=True)


if __name__ == "__main__":
    main()
