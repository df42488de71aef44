"""Writing a run as ``docs/benchmarks.md``: tables, ratios, targets and the machine.

Ratios: "× eager" is eager's step time divided by the compiler's (above 1 is
faster); "fg / tc" is fullgraph's step time divided by ``torch.compile``'s
(at most 1 meets the target).  A cell reads "n/a" when nothing was measured,
"failed" when the compiler failed on that model and "not available" when the
compiler is not there at all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from bench.compilers import EAGER, FULLGRAPH, TORCH_COMPILE
from bench.suite import (
    FAILED,
    NOT_AVAILABLE,
    OK,
    OWN_INPUTS,
    SKIPPED,
    CompilerResult,
    ModelResult,
)
from bench.targets import Verdict

MIB = 1024 * 1024
COMPILERS = (EAGER, TORCH_COMPILE, FULLGRAPH)
NOTES_PATH = Path(__file__).resolve().parent / "NOTES.md"


def _row(cells: Iterable[Any]) -> str:
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    if not rows:
        return ["_No model in this group._", ""]
    lines = [_row(header), _row(["---"] * len(header))]
    lines.extend(_row(row) for row in rows)
    return lines + [""]


def _entry(result: ModelResult, name: str) -> CompilerResult | None:
    return result.compilers.get(name)


def _cell(result: ModelResult, name: str, value: Callable[[CompilerResult], Any]) -> str:
    """One compiler's value for one model, or why there is none."""
    if result.status != OK:
        return result.status
    entry = _entry(result, name)
    if entry is None:
        return "n/a"
    if entry.status == NOT_AVAILABLE:
        return NOT_AVAILABLE
    got = value(entry)
    if got is None:
        return FAILED if entry.status == FAILED else "n/a"
    return got


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g}" if seconds < 1 else f"{seconds * 1e3:.0f}"


def _ratio(numerator: float | None, denominator: float | None, suffix: str = "") -> str:
    if numerator is None or denominator is None or denominator <= 0:
        return "n/a"
    return f"{numerator / denominator:.2f}{suffix}"


def _step(result: ModelResult, name: str, size: str) -> float | None:
    entry = _entry(result, name)
    if result.status != OK or entry is None or entry.status != OK:
        return None
    return entry.step_s.get(size)


def _outputs(result: ModelResult) -> str:
    if result.status != OK:
        return result.status
    if not result.outputs_comparable:
        return "not compared (eager's own calls differ)"
    differing = [
        name
        for name in (TORCH_COMPILE, FULLGRAPH)
        if (entry := _entry(result, name)) is not None and entry.outputs_equal is False
    ]
    return "differ: " + ", ".join(differing) if differing else "equal"


def graphs_table(results: list[ModelResult]) -> list[str]:
    rows = []
    for result in results:
        rows.append(
            [
                result.name,
                result.origin,
                _cell(result, TORCH_COMPILE, lambda e: e.graphs),
                _cell(result, TORCH_COMPILE, lambda e: e.breaks),
                _cell(result, FULLGRAPH, lambda e: e.graphs),
                _cell(result, FULLGRAPH, lambda e: e.breaks),
                _outputs(result),
            ]
        )
    header = ["model", "source", "Dynamo graphs", "Dynamo breaks", "fullgraph graphs",
              "fullgraph breaks", "outputs vs eager"]  # fmt: skip
    return _table(header, rows)


def _step_ms(entry: CompilerResult, size: str) -> str | None:
    if size not in entry.step_s:
        return None
    # Without replays fullgraph's time is eager's plus its bookkeeping, not a compiled step.
    return _ms(entry.step_s[size]) + (" (no replay)" if entry.replayed is False else "")


def step_table(results: list[ModelResult], size: str) -> list[str]:
    rows = []
    for result in results:
        eager = _step(result, EAGER, size)
        compiled = _step(result, TORCH_COMPILE, size)
        fullgraph = _step(result, FULLGRAPH, size)
        rows.append(
            [
                result.name,
                *(_cell(result, name, lambda e: _step_ms(e, size)) for name in COMPILERS),
                _ratio(eager, compiled, "×"),
                _ratio(eager, fullgraph, "×"),
                _ratio(fullgraph, compiled),
            ]
        )
    header = ["model", "eager ms", "torch.compile ms", "fullgraph ms",
              "torch.compile × eager", "fullgraph × eager", "fg / tc"]  # fmt: skip
    return _table(header, rows)


def _overhead(entry: CompilerResult) -> str | None:
    if entry.outside_graph_s is None or not entry.step_s:
        return None
    first = next(iter(entry.step_s))
    share = entry.outside_graph_s / entry.step_s[first]
    return f"{entry.outside_graph_s * 1e6:.0f} µs ({share:.1%})"


def _mib(entry: CompilerResult) -> str | None:
    if entry.peak_memory_bytes is None:
        return None
    return f"{entry.peak_memory_bytes / MIB:.2f}"


def cost_table(results: list[ModelResult]) -> list[str]:
    rows = []
    for result in results:
        compiled, fullgraph = _entry(result, TORCH_COMPILE), _entry(result, FULLGRAPH)
        usable = result.status == OK and compiled and fullgraph
        rows.append(
            [
                result.name,
                _cell(result, TORCH_COMPILE, lambda e: e.cold_start_s and f"{e.cold_start_s:.2f}"),
                _cell(result, FULLGRAPH, lambda e: e.cold_start_s and f"{e.cold_start_s:.2f}"),
                _ratio(fullgraph.cold_start_s, compiled.cold_start_s) if usable else "n/a",
                _cell(result, TORCH_COMPILE, _overhead),
                _cell(result, FULLGRAPH, _overhead),
                _cell(result, EAGER, _mib),
                _cell(result, TORCH_COMPILE, _mib),
                _cell(result, FULLGRAPH, _mib),
            ]
        )
    header = ["model", "cold start tc s", "cold start fg s", "fg / tc",
              "outside graphs tc", "outside graphs fg",
              "peak MiB eager", "peak MiB tc", "peak MiB fg"]  # fmt: skip
    return _table(header, rows)


def targets_table(verdicts: list[Verdict]) -> list[str]:
    return _table(
        ["target", "result", "detail"], [[v.target, v.status, v.detail] for v in verdicts]
    )


def failures_table(results: list[ModelResult]) -> list[str]:
    rows = []
    for result in results:
        if result.status != OK:
            rows.append([result.name, "(model)", result.error or result.status])
            continue
        for entry in result.compilers.values():
            if entry.status == FAILED:
                rows.append([result.name, entry.compiler, entry.error])
            # One row per kind of note: a stateful program differs on every check, by
            # slightly different amounts, and tracebacks belong in the JSON.
            kinds = set()
            for note in entry.notes:
                kind = note.split(" by up to")[0]
                if not note.startswith("Traceback") and kind not in kinds:
                    kinds.add(kind)
                    rows.append([result.name, entry.compiler, note])
    return _table(["model", "compiler", "what happened"], rows)


def counters_table(results: list[ModelResult]) -> list[str]:
    measured = [
        (result.name, entry.counters)
        for result in results
        if (entry := _entry(result, FULLGRAPH)) is not None and entry.counters
    ]
    if not measured:
        return ["_fullgraph reported no counters._", ""]
    keys = sorted({key for _, counters in measured for key in counters})
    rows = [[name] + [counters.get(key, "") for key in keys] for name, counters in measured]
    return _table(["model"] + keys, rows)


# How each figure is measured, printed under the machine description.
PROTOCOL = (
    (
        "- **Cold start:** the first two calls after compiling with empty Inductor caches "
        "(fullgraph's first call is its monitoring run, the second the first replay)."
    ),
    (
        "- **Outside graphs:** per-call time not spent inside a compiled graph (guards, "
        "mocks, wrappers and eager callouts), measured by compiling a second time with a "
        "backend that clocks each graph; shown with its share of the compiler's step time "
        "at the smallest inputs."
    ),
    (
        "- **Peak memory:** the highest tensor memory one step allocates above what is live "
        "before it (weights and inputs excluded), at the largest inputs."
    ),
    (
        "- **Outputs:** every compiler's outputs compared with eager's "
        "(`allclose`, rtol 1e-3, atol 1e-4)."
    ),
)


def _environment_lines(env: dict[str, Any], settings: dict[str, Any]) -> list[str]:
    device = env["device"] + (f" ({env['gpu']}, CUDA {env.get('cuda')})" if "gpu" in env else "")
    machine = (
        f"- **Device:** {device}; CPU {env['cpu']}, {env['cpu_count']} cores, "
        f"{env['torch_threads']} torch threads; {env['platform']}"
    )
    versions = (
        f"- **Versions:** Python {env['python']}, torch {env['torch']}, "
        f"transformers {env['transformers']}, fullgraph {env['fullgraph']} "
        f"(commit {env.get('commit', 'unknown')})"
    )
    backend = (
        f"- **Backend:** `{env['backend']}` for both compilers; `torch.compile(dynamic=False)`"
    )
    batches = ", ".join(map(str, settings["batch_sizes"]))
    protocol = (
        f"- **Protocol:** batch sizes {batches} for the `transformers` models, the shipped "
        f"inputs for the repository's programs; {settings['warmup']} warm-up calls, then the "
        f"median of {settings['repetitions']} timed calls, the compilers interleaved call by "
        "call; inference (`torch.no_grad`)."
    )
    date = f"- **Date:** {env['date']}; whole run {settings.get('duration_s', 0) / 60:.1f} min."
    return [machine, versions, backend, protocol, *PROTOCOL, date]


def coverage_line(results: list[ModelResult]) -> str:
    """One sentence on how much of the run each compiler actually covered."""
    measured = [r for r in results if r.status == OK]
    parts = []
    for name in (TORCH_COMPILE, FULLGRAPH):
        entries = [r.compilers[name] for r in measured if name in r.compilers]
        ok = [e for e in entries if e.status == OK and e.step_s]
        failed = sum(e.status == FAILED for e in entries)
        fell_back = sum(e.replayed is False for e in ok)
        part = f"{name} ran {len(ok)} of {len(measured)} models"
        if failed:
            part += f", failed on {failed}"
        if fell_back:
            part += f", fell back to eager on {fell_back}"
        parts.append(part)
    broken = len(results) - len(measured) - sum(r.status == SKIPPED for r in results)
    tail = f"; {broken} models could not be built" if broken else ""
    return "**Coverage:** " + "; ".join(parts) + tail + "."


def render(
    results: list[ModelResult],
    verdicts: list[Verdict],
    env: dict[str, Any],
    settings: dict[str, Any],
    plot_name: str | None,
) -> str:
    lines = [
        "# Benchmarks: fullgraph against eager and torch.compile",
        "",
        "_Generated by `bench/run.py` (`make bench`); regenerate it, don't edit it by hand._",
        "",
    ]
    fullgraph_absent = [
        r.compilers[FULLGRAPH].error
        for r in results
        if FULLGRAPH in r.compilers and r.compilers[FULLGRAPH].status == NOT_AVAILABLE
    ]
    if fullgraph_absent:
        warning = (
            f"> **fullgraph was not measured in this run: {fullgraph_absent[0]}.** Its columns "
            'read "not available" and every target reads n/a; the eager and '
            "`torch.compile` columns are real."
        )
        lines += [warning, ""]
    lines += [coverage_line(results), ""]
    lines += _environment_lines(env, settings) + [""]
    if plot_name:
        lines += [f"![Speedup over eager per model]({plot_name})", ""]
    skipped = [r.name for r in results if r.status == SKIPPED]
    results = [r for r in results if r.status != SKIPPED]
    batched = [r for r in results if OWN_INPUTS not in r.input_sizes]
    shipped = [r for r in results if OWN_INPUTS in r.input_sizes]
    sizes = [str(b) for b in settings["batch_sizes"]]
    lines += ["## Targets", ""] + targets_table(verdicts)
    lines += ["## Graphs and breaks", "",
              "Breaks are counted by distinct source location.", ""]  # fmt: skip
    lines += graphs_table(results)
    for size in sizes:
        lines += [f"## Step time at batch {size}", ""] + step_table(batched, size)
    if shipped:
        lines += ["## Step time of the repository's programs (their own inputs)", ""]
        lines += step_table(shipped, OWN_INPUTS)
    lines += ["## Cold start, time outside graphs, peak memory", ""] + cost_table(results)
    lines += [
        "## fullgraph counters",
        "",
        "Hits prove that steady-state calls replayed a record.",
        "",
    ]
    lines += counters_table(results)
    lines += ["## Failures and notes", ""] + failures_table(results)
    if skipped:
        lines += [f"Skipped when the time budget was spent: {', '.join(skipped)}.", ""]
    if NOTES_PATH.is_file():
        lines += ["## Closing note", "", NOTES_PATH.read_text().strip(), ""]
    return "\n".join(lines).rstrip() + "\n"
