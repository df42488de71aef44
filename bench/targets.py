"""Judging a run against the targets of issue 8 (and the overhead goal of issue 2).

Each target yields a verdict (met, missed, or n/a when nothing was measured)
and names the models that missed, so the report can show where and by how much.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from bench.compilers import EAGER, FULLGRAPH, TORCH_COMPILE
from bench.measure import geometric_mean
from bench.suite import OK, CompilerResult, ModelResult

MET, MISSED, NOT_APPLICABLE = "met", "missed", "n/a"

# MagPy's mean end-to-end speedup over eager (PAPERS.md §1).
MAGPY_SPEEDUP = 1.55
GUARD_MOCK_BUDGET = 0.02


@dataclasses.dataclass
class Verdict:
    target: str
    status: str
    detail: str


def _measured(result: ModelResult, *names: str) -> list[CompilerResult] | None:
    entries = [result.compilers.get(name) for name in names]
    if result.status != OK or any(e is None or e.status != OK for e in entries):
        return None
    return entries  # type: ignore[return-value]


def _no_replay_note(fullgraph: CompilerResult) -> str:
    return ", fell back to eager" if fullgraph.replayed is False else ""


def _verdict(target: str, checked: int, misses: list[str], summary: str = "") -> Verdict:
    if checked == 0:
        return Verdict(target, NOT_APPLICABLE, "no model measured with both compilers")
    if misses:
        return Verdict(
            target, MISSED, f"missed on {len(misses)} of {checked}: " + ", ".join(misses)
        )
    return Verdict(target, MET, summary or f"all {checked} models")


def graph_count(results: Iterable[ModelResult]) -> Verdict:
    target = "fullgraph's graph count ≤ Dynamo's, strictly lower where Dynamo breaks"
    checked, misses = 0, []
    for result in results:
        entries = _measured(result, TORCH_COMPILE, FULLGRAPH)
        if not entries or entries[0].graphs is None or entries[1].graphs is None:
            continue
        dynamo, fullgraph = entries
        checked += 1
        if dynamo.graphs == 0 and fullgraph.graphs > 0:
            continue  # Dynamo captured nothing and ran the model eagerly; any graph is fewer breaks
        dynamo_breaks = bool(dynamo.breaks) or dynamo.graphs > 1
        if fullgraph.graphs > dynamo.graphs or (
            dynamo_breaks and fullgraph.graphs >= dynamo.graphs
        ):
            misses.append(f"{result.name} ({fullgraph.graphs} vs {dynamo.graphs})")
    return _verdict(target, checked, misses)


def step_time(results: Iterable[ModelResult]) -> Verdict:
    target = "steady-state step time ≤ torch.compile's (ratio ≤ 1.0) on every model and size"
    checked, misses = 0, []
    for result in results:
        entries = _measured(result, TORCH_COMPILE, FULLGRAPH)
        if not entries:
            continue
        compiled, fullgraph = entries
        for size, seconds in fullgraph.step_s.items():
            if size not in compiled.step_s:
                continue
            checked += 1
            ratio = seconds / compiled.step_s[size]
            if ratio > 1.0 or fullgraph.replayed is False:
                misses.append(f"{result.name} [{size}] ({ratio:.2f}{_no_replay_note(fullgraph)})")
    return _verdict(target, checked, misses)


def largest_size(entry: CompilerResult) -> str | None:
    return list(entry.step_s)[-1] if entry.step_s else None


def geomean_speedup(results: Iterable[ModelResult]) -> Verdict:
    target = f"geometric-mean speedup over eager ≥ {MAGPY_SPEEDUP}× (MagPy) where Inductor helps"
    fullgraph_speedups, compile_speedups = [], []
    for result in results:
        entries = _measured(result, EAGER, TORCH_COMPILE, FULLGRAPH)
        if not entries:
            continue
        eager, compiled, fullgraph = entries
        size = largest_size(eager)
        if size is None or size not in compiled.step_s or size not in fullgraph.step_s:
            continue
        # "Where Inductor helps at all on this device": torch.compile beats eager.
        if eager.step_s[size] / compiled.step_s[size] <= 1.0:
            continue
        fullgraph_speedups.append(eager.step_s[size] / fullgraph.step_s[size])
        compile_speedups.append(eager.step_s[size] / compiled.step_s[size])
    if not fullgraph_speedups:
        return Verdict(target, NOT_APPLICABLE, "no model where torch.compile beats eager")
    ours = geometric_mean(fullgraph_speedups) or 0.0
    theirs = geometric_mean(compile_speedups) or 0.0
    detail = (
        f"fullgraph {ours:.3f}×, torch.compile {theirs:.3f}× over "
        f"{len(fullgraph_speedups)} models at their largest inputs"
    )
    return Verdict(target, MET if ours >= MAGPY_SPEEDUP else MISSED, detail)


def guard_mock_share(results: Iterable[ModelResult]) -> Verdict:
    target = f"guard + mock ≤ {GUARD_MOCK_BUDGET:.0%} of the step at batch 1"
    checked, misses = 0, []
    for result in results:
        entries = _measured(result, FULLGRAPH)
        if not entries:
            continue
        fullgraph = entries[0]
        if "1" not in fullgraph.step_s:
            continue
        checked += 1
        if fullgraph.outside_graph_s is None:
            misses.append(f"{result.name} (no compiled graph ran)")
            continue
        share = fullgraph.outside_graph_s / fullgraph.step_s["1"]
        if share > GUARD_MOCK_BUDGET:
            misses.append(f"{result.name} ({share:.1%})")
    return _verdict(target, checked, misses)


def cold_start(results: Iterable[ModelResult]) -> Verdict:
    target = "cold start ≤ torch.compile's"
    checked, misses = 0, []
    for result in results:
        entries = _measured(result, TORCH_COMPILE, FULLGRAPH)
        if not entries or entries[0].cold_start_s is None or entries[1].cold_start_s is None:
            continue
        checked += 1
        ratio = entries[1].cold_start_s / entries[0].cold_start_s
        # A fullgraph that fell back to eager compiled nothing: its quick start is no win.
        if ratio > 1.0 or entries[1].replayed is False:
            misses.append(f"{result.name} ({ratio:.2f}{_no_replay_note(entries[1])})")
    return _verdict(target, checked, misses)


def evaluate(results: list[ModelResult]) -> list[Verdict]:
    return [
        graph_count(results),
        step_time(results),
        geomean_speedup(results),
        guard_mock_share(results),
        cold_start(results),
    ]
