"""Issue #17's section of ``bench/coverage.py``: fullgraph against Dynamo on ``bench/capture_programs``.

For each program, in the same process and run, both systems are measured with
the ``eager`` backend (capture, not kernels):

- *graphs*: fullgraph's ``explain()`` graph count and breaks; Dynamo's
  ``torch._dynamo.explain`` graph count and break reasons;
- *calls*: three calls with fresh inputs (seeds 0, 1, 2) of
  ``fullgraph.runtime.compile(..., backend="eager", eager_check=False)`` and of
  ``torch.compile(..., fullgraph=True, backend="eager")``, each compared with a
  fresh eager model by ``torch.testing.assert_close`` (for a ``GRADIENTS``
  program, the parameter gradients of the summed outputs too).  A call that
  differs is a *wrong output*: it is counted and its message printed, never
  folded into "not captured".  A call that raises is an *error*; a fullgraph
  call that ran eagerly (``stats.fallbacks``) is a *fallback*.

A program is *one graph and correct* when its explain reports one graph and no
break, and the three calls give eager's results with no error and no fallback.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch._dynamo

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent / "tests"))
import capture_programs
from programs import loader  # comparable_output is the corpus's

SEEDS = (0, 1, 2)


@dataclasses.dataclass
class SystemResult:
    """One system on one program."""

    graphs: int | None = None  # None: explain raised
    breaks: int = 0
    explain_error: str | None = None
    calls_equal: int = 0  # of len(SEEDS)
    wrong: list[str] = dataclasses.field(default_factory=list)  # "call 2: <assert message>"
    error: str | None = None  # the exception that stopped compile or a call
    fallbacks: int = 0
    monitor_runs: int | None = None  # fullgraph only: of the three calls, how many monitored
    break_sites: list[str] = dataclasses.field(default_factory=list)

    @property
    def one_graph(self) -> bool:
        return self.graphs == 1 and self.breaks == 0

    @property
    def correct(self) -> bool:
        """Three calls equal to eager, none raised, none fell back."""
        return self.calls_equal == len(SEEDS) and self.error is None and self.fallbacks == 0

    @property
    def one_graph_and_correct(self) -> bool:
        return self.one_graph and self.correct

    def cell(self) -> str:
        graphs = "err" if self.graphs is None else f"{self.graphs}g {self.breaks}b"
        if self.wrong:
            calls = f"WRONG x{len(self.wrong)}"
        elif self.error is not None:
            calls = self.error
        else:
            calls = f"{self.calls_equal}/{len(SEEDS)} eq"
        if self.fallbacks:
            calls += f" {self.fallbacks}fb"
        if self.monitor_runs is not None:
            calls += f" {self.monitor_runs}mon"
        return f"{'yes' if self.one_graph_and_correct else 'no '} {graphs} {calls}"


@dataclasses.dataclass
class CaptureRow:
    name: str
    category: str
    fullgraph: SystemResult
    dynamo: SystemResult


def _exception_name(exc: BaseException) -> str:
    return type(exc).__name__


def _gradients(model: Any, output: Any) -> list[torch.Tensor | None]:
    """Parameter gradients of the sum of the output's floating-point tensors."""
    leaves = [
        leaf
        for leaf in loader.output_leaves(output)
        if isinstance(leaf, torch.Tensor) and leaf.is_floating_point() and leaf.requires_grad
    ]
    params = [p for p in model.parameters() if p.requires_grad]
    for p in params:
        p.grad = None
    if leaves:
        sum(leaf.sum() for leaf in leaves).backward()
    return [p.grad for p in params]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:160] if text else _exception_name(exc)


def _what_differs(exc: AssertionError) -> str:
    """``"gradients [1][0]: Tensor-likes are not close! ..."``: which part, then how."""
    text = " ".join(str(exc).split())
    where = re.search(r"The failure occurred for item (\[\d+\])(\S*)", text)
    if where is None:
        return text[:200]
    part = "output" if where[1] == "[0]" else "gradients"
    return f"{part} {where[2] or ''}: {text[: where.start()].strip()[:200]}"


def _calls(program, make_compiled: Callable[[Any], Callable], result: SystemResult) -> Any:
    """Three calls with fresh inputs, each compared with eager; fills ``result``."""
    model = program.make_model()
    try:
        compiled = make_compiled(model)
    except Exception as exc:  # noqa: BLE001  a failure to compile is a measured outcome
        result.error = _exception_name(exc)
        return None
    eager_model = program.make_model()
    with_gradients = getattr(program, "GRADIENTS", False)
    for call, seed in enumerate(SEEDS, start=1):
        torch.manual_seed(seed)
        expected_out = eager_model(*program.make_inputs(seed))
        expected = [loader.comparable_output(expected_out)]
        if with_gradients:
            expected.append(_gradients(eager_model, expected_out))
        torch.manual_seed(seed)
        try:
            actual_out = compiled(*program.make_inputs(seed))
            actual = [loader.comparable_output(actual_out)]
            if with_gradients:
                actual.append(_gradients(model, actual_out))
        except Exception as exc:  # noqa: BLE001  a call that raises is a measured outcome
            result.error = _exception_name(exc)
            return compiled
        try:
            torch.testing.assert_close(actual, expected)
        except AssertionError as exc:
            result.wrong.append(f"call {call}: {_what_differs(exc)}")
            continue
        result.calls_equal += 1
    return compiled


def measure_fullgraph(program, fg_compile, fg_explain) -> SystemResult:
    result = SystemResult()
    try:
        report = fg_explain(program.make_model(), *program.make_inputs(0))
        result.graphs = report.graph_count
        result.break_sites = [
            f"{b['code']} {b['function']} at {Path(b['file']).name}:{b['line']}"
            for b in report.to_json()["breaks"]
        ]
        result.breaks = len(result.break_sites)
    except Exception as exc:  # noqa: BLE001  any failure is a measured outcome
        result.explain_error = f"{_exception_name(exc)}: {_first_line(exc)}"
    compiled = _calls(
        program, lambda model: fg_compile(model, backend="eager", eager_check=False), result
    )
    if compiled is not None:
        result.fallbacks = compiled.stats.fallbacks
        result.monitor_runs = compiled.stats.monitor_runs
        if compiled.stats.fallback_reason:
            result.break_sites.append(f"fallback: {compiled.stats.fallback_reason[:160]}")
    return result


def measure_dynamo(program) -> SystemResult:
    result = SystemResult()
    torch._dynamo.reset()
    try:
        explained = torch._dynamo.explain(program.make_model())(*program.make_inputs(0))
        result.graphs = explained.graph_count
        result.break_sites = [str(r.reason).splitlines()[0][:160] for r in explained.break_reasons]
        # graph_break_count misses a break after the last graph and a skipped frame.
        result.breaks = max(explained.graph_break_count, len(result.break_sites))
    except Exception as exc:  # noqa: BLE001  any failure is a measured outcome
        result.explain_error = f"{_exception_name(exc)}: {_first_line(exc)}"
    torch._dynamo.reset()
    _calls(
        program,
        lambda model: torch.compile(model, fullgraph=True, backend="eager"),
        result,
    )
    torch._dynamo.reset()
    return result


def measure(names: list[str], quiet: Callable[[], contextlib.AbstractContextManager]) -> list:
    from fullgraph.runtime import compile as fg_compile
    from fullgraph.runtime import explain as fg_explain

    rows = []
    for name in names:
        program = capture_programs.load_program(name)
        with quiet():
            fullgraph = measure_fullgraph(program, fg_compile, fg_explain)
            dynamo = measure_dynamo(program)
        rows.append(CaptureRow(name, capture_programs.category(name), fullgraph, dynamo))
        print(f"  measured {name}", file=sys.stderr, flush=True)
    return rows


def summary(rows: list[CaptureRow]) -> dict[str, dict[str, int]]:
    """Per category and ``"total"``: programs, one-graph-and-correct and wrong outputs."""
    groups: dict[str, list[CaptureRow]] = {}
    for row in rows:
        groups.setdefault(row.category, []).append(row)
    groups["total"] = rows
    return {
        key: {
            "programs": len(group),
            "fullgraph_one_graph_correct": sum(r.fullgraph.one_graph_and_correct for r in group),
            "dynamo_one_graph_correct": sum(r.dynamo.one_graph_and_correct for r in group),
            # torch.compile(fullgraph=True) captures data-dependent shapes that explain
            # (default config) reports as breaks: its own verdict, apart.
            "dynamo_fullgraph_true_correct": sum(r.dynamo.correct for r in group),
            "fullgraph_wrong_programs": sum(bool(r.fullgraph.wrong) for r in group),
            "dynamo_wrong_programs": sum(bool(r.dynamo.wrong) for r in group),
            "fullgraph_fallback_programs": sum(bool(r.fullgraph.fallbacks) for r in group),
            "fullgraph_error_programs": sum(r.fullgraph.error is not None for r in group),
            "dynamo_error_programs": sum(r.dynamo.error is not None for r in group),
        }
        for key, group in groups.items()
    }


def _render(header: tuple, lines: list[tuple]) -> str:
    widths = [max(len(str(cells[i])) for cells in [header, *lines]) for i in range(len(header))]

    def render(cells):
        return "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()

    return "\n".join([render(header), render(["-" * w for w in widths]), *map(render, lines)])


def format_rows(rows: list[CaptureRow]) -> str:
    return _render(
        ("program", "fullgraph", "dynamo (fullgraph=True / explain)"),
        [(row.name, row.fullgraph.cell(), row.dynamo.cell()) for row in rows],
    )


def format_summary(figures: dict[str, dict[str, int]]) -> str:
    header = (
        "category",
        "programs",
        "fullgraph 1g+correct",
        "dynamo 1g+correct",
        "dynamo fullgraph=True correct",
        "wrong (fg/dyn)",
        "fg fallbacks",
        "errors (fg/dyn)",
    )
    lines = [
        (
            key,
            f["programs"],
            f["fullgraph_one_graph_correct"],
            f["dynamo_one_graph_correct"],
            f["dynamo_fullgraph_true_correct"],
            f"{f['fullgraph_wrong_programs']}/{f['dynamo_wrong_programs']}",
            f["fullgraph_fallback_programs"],
            f"{f['fullgraph_error_programs']}/{f['dynamo_error_programs']}",
        )
        for key, f in figures.items()
    ]
    return _render(header, lines)


def format_details(rows: list[CaptureRow]) -> str:
    """Every wrong output, error and break site, so that none is hidden by the table."""
    out = []
    for row in rows:
        for system, result in (("fullgraph", row.fullgraph), ("dynamo", row.dynamo)):
            for wrong in result.wrong:
                out.append(f"WRONG OUTPUT {system} {row.name} {wrong}")
            if result.explain_error:
                out.append(f"{system} {row.name} explain raised {result.explain_error}")
            if result.error:
                out.append(f"{system} {row.name} calls raised {result.error}")
            for site in result.break_sites[:3]:
                out.append(f"{system} {row.name} break: {site}")
    return "\n".join(out)
