"""Coverage of the model corpus: fullgraph against TorchDynamo, in the same run.

For every program in ``tests/programs`` (see ``docs/corpus.md``) this measures,
for each of the two systems:

- *one graph*: the program is captured as a single graph with no break
  (fullgraph: ``explain()`` reports ``graph_count == 1`` and no breaks;
  Dynamo: ``torch._dynamo.explain`` reports one graph and no break reason);
- *equal*: the compiled program returns what eager returns on three calls
  with fresh random data (fullgraph: ``fullgraph.runtime.compile(...,
  backend="eager")``; Dynamo: ``torch.compile(fullgraph=True,
  backend="eager")``; a failure to compile counts as not equal).

- *sizes settle*: over five calls whose batch grows by 0, 1, 3, 2 and 5 rows,
  results equal eager's and the last three (new) sizes need no further
  compilation (fullgraph: no monitoring run; Dynamo: ``torch.compile`` with
  its default automatic dynamic shapes compiles no graph).  Programs whose
  eager code rejects another batch size are left out of this figure.

It prints a table and the six headline figures; ``--json PATH`` also writes
them.  ``--section capture`` measures issue #17's programs instead
(``bench/capture_programs``: custom autograd Functions, legacy APIs, RNNs,
data-dependent branches and shapes; see ``bench/capture_section.py``), with a
table per program, one per category and every wrong output listed;
``--section all`` measures both.  A runtime that is not complete yet is measured as it is: whatever it
raises is counted as a failure and named in the table.

    .venv/bin/python bench/coverage.py [--section corpus|capture|all] [--json coverage.json]
        [--only NAME ...]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import logging
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch._dynamo

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))  # capture_section, also when imported as bench.coverage
import capture_section  # issue #17's programs: --section capture
from programs import loader  # the corpus lives with the tests

SEEDS = (0, 1, 2)


@dataclasses.dataclass
class Outcome:
    """One system's result on one program: a verdict, or the exception that stopped it."""

    ok: bool
    detail: str  # graphs/breaks, or the exception type
    breaks: list[str] = dataclasses.field(default_factory=list)  # "FG201 print at file:line"

    def cell(self) -> str:
        return ("yes " if self.ok else "no  ") + self.detail


@dataclasses.dataclass
class Row:
    name: str
    expected_graphs: int
    marked_breaks: int
    fullgraph_one_graph: Outcome
    fullgraph_equal: Outcome
    dynamo_one_graph: Outcome
    dynamo_equal: Outcome
    fullgraph_sizes: Outcome
    dynamo_sizes: Outcome


def _failure(exc: BaseException) -> Outcome:
    return Outcome(False, type(exc).__name__)


@contextlib.contextmanager
def _quiet():
    """Keep the programs' prints and warnings out of the table."""
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _equal_over_calls(program, compiled_callable: Callable) -> Outcome:
    eager_model = program.make_model()
    for seed in SEEDS:
        expected = loader.comparable_output(eager_model(*program.make_inputs(seed)))
        actual = loader.comparable_output(compiled_callable(*program.make_inputs(seed)))
        try:
            torch.testing.assert_close(actual, expected)
        except AssertionError:
            return Outcome(False, f"differs on call {seed + 1}")
    return Outcome(True, "")


NOT_APPLICABLE = "n/a"


def _sizes_settle(program, make_compiled: Callable, compiles: Callable[[Any], int]) -> Outcome:
    """Equal to eager as the batch grows, with no compilation for the last three sizes."""
    eager_model = program.make_model()
    compiled = make_compiled(program.make_model())
    late = 0
    for call, extra in enumerate(loader.BATCH_GROWTH):
        try:
            torch.manual_seed(call)
            expected = eager_model(*loader.with_batch_grown(program.make_inputs(call), extra))
        except Exception:  # noqa: BLE001 - written for one batch size: not measured
            return Outcome(False, NOT_APPLICABLE)
        before = compiles(compiled)
        torch.manual_seed(call)
        actual = compiled(*loader.with_batch_grown(program.make_inputs(call), extra))
        if call >= 2:
            late += compiles(compiled) - before
        try:
            torch.testing.assert_close(
                loader.comparable_output(actual), loader.comparable_output(expected)
            )
        except AssertionError:
            return Outcome(False, f"differs at +{extra} rows")
    return Outcome(late == 0, f"{late} late")


def _load_runtime() -> tuple[Any, Any, BaseException | None]:
    """``compile`` and ``explain`` from fullgraph.runtime, or why they are missing."""
    try:
        from fullgraph.runtime import compile as fg_compile
        from fullgraph.runtime import explain as fg_explain
    except Exception as exc:  # noqa: BLE001  an incomplete runtime is measured, not fatal
        return None, None, exc
    return fg_compile, fg_explain, None


def measure_fullgraph(program, fg_compile, fg_explain, missing) -> tuple[Outcome, Outcome]:
    if missing is not None:
        return _failure(missing), _failure(missing)
    try:
        report = fg_explain(program.make_model(), *program.make_inputs(0))
        breaks = [
            f"{b['code']} {b['function']} at {b['file']}:{b['line']}"
            for b in report.to_json()["breaks"]
        ]
        one_graph = Outcome(
            report.graph_count == 1 and not breaks, f"{report.graph_count}g {len(breaks)}b", breaks
        )
    except Exception as exc:  # noqa: BLE001  any failure is a measured outcome
        one_graph = _failure(exc)
    try:
        compiled = fg_compile(program.make_model(), backend="eager")
        equal = _equal_over_calls(program, compiled)
        if equal.ok:
            equal.detail = f"{compiled.stats.monitor_runs} mon"
    except Exception as exc:  # noqa: BLE001  any failure is a measured outcome
        equal = _failure(exc)
    return one_graph, equal


def measure_fullgraph_sizes(program, fg_compile, missing) -> Outcome:
    if missing is not None:
        return _failure(missing)
    try:
        return _sizes_settle(
            program,
            lambda model: fg_compile(model, backend="eager"),
            lambda compiled: compiled.stats.monitor_runs,
        )
    except Exception as exc:  # noqa: BLE001  any failure is a measured outcome
        return _failure(exc)


def measure_dynamo_sizes(program) -> Outcome:
    torch._dynamo.reset()
    graphs = [0]

    def counting(gm, example_inputs):
        graphs[0] += 1
        return gm.forward

    try:
        return _sizes_settle(
            program,
            lambda model: torch.compile(model, backend=counting),
            lambda compiled: graphs[0],
        )
    except Exception as exc:  # noqa: BLE001  any failure is a measured outcome
        return _failure(exc)
    finally:
        torch._dynamo.reset()


def measure_dynamo(program) -> tuple[Outcome, Outcome]:
    torch._dynamo.reset()
    try:
        explained = torch._dynamo.explain(program.make_model())(*program.make_inputs(0))
        # graph_break_count is graph_count - 1: it misses a break after the last
        # graph and a frame Dynamo skipped (0 graphs), so look at the reasons too.
        reasons = [str(reason.reason).splitlines()[0] for reason in explained.break_reasons]
        breaks = max(explained.graph_break_count, len(reasons))
        one_graph = Outcome(
            explained.graph_count == 1 and breaks == 0,
            f"{explained.graph_count}g {breaks}b",
            reasons,
        )
    except Exception as exc:  # noqa: BLE001  any failure is a measured outcome
        one_graph = _failure(exc)
    torch._dynamo.reset()
    try:
        compiled = torch.compile(program.make_model(), fullgraph=True, backend="eager")
        equal = _equal_over_calls(program, compiled)
    except Exception as exc:  # noqa: BLE001  any failure is a measured outcome
        equal = _failure(exc)
    torch._dynamo.reset()
    return one_graph, equal


def measure(names: list[str]) -> list[Row]:
    fg_compile, fg_explain, missing = _load_runtime()
    rows = []
    for name in names:
        program = loader.load_program(name)
        with _quiet():
            fg_one, fg_equal = measure_fullgraph(program, fg_compile, fg_explain, missing)
            dyn_one, dyn_equal = measure_dynamo(program)
            fg_sizes = measure_fullgraph_sizes(program, fg_compile, missing)
            dyn_sizes = measure_dynamo_sizes(program)
        rows.append(
            Row(
                name,
                program.EXPECTED_GRAPHS,
                len(loader.expected_breaks(name)),
                fg_one,
                fg_equal,
                dyn_one,
                dyn_equal,
                fg_sizes,
                dyn_sizes,
            )
        )
        print(f"  measured {name}", file=sys.stderr, flush=True)
    return rows


def _percent(rows: list[Row], field: str) -> float:
    return 100.0 * sum(getattr(row, field).ok for row in rows) / len(rows) if rows else 0.0


def headline(rows: list[Row]) -> dict[str, Any]:
    # A program whose eager code rejects a second batch size is not measured for sizes.
    sized = [
        row
        for row in rows
        if NOT_APPLICABLE not in (row.fullgraph_sizes.detail, row.dynamo_sizes.detail)
    ]
    return {
        "programs": len(rows),
        "breakless_programs": sum(row.marked_breaks == 0 for row in rows),
        "resizable_programs": len(sized),
        "fullgraph": {
            "one_graph_percent": _percent(rows, "fullgraph_one_graph"),
            "equal_percent": _percent(rows, "fullgraph_equal"),
            "sizes_settle_percent": _percent(sized, "fullgraph_sizes"),
        },
        "dynamo": {
            "one_graph_percent": _percent(rows, "dynamo_one_graph"),
            "equal_percent": _percent(rows, "dynamo_equal"),
            "sizes_settle_percent": _percent(sized, "dynamo_sizes"),
        },
    }


def format_table(rows: list[Row]) -> str:
    header = (
        "program",
        "exp",
        "fullgraph one graph",
        "fullgraph equal",
        "dynamo one graph",
        "dynamo equal",
        "fullgraph sizes",
        "dynamo sizes",
    )
    lines = [
        (
            row.name,
            f"{row.expected_graphs}g {row.marked_breaks}b",
            row.fullgraph_one_graph.cell(),
            row.fullgraph_equal.cell(),
            row.dynamo_one_graph.cell(),
            row.dynamo_equal.cell(),
            row.fullgraph_sizes.cell(),
            row.dynamo_sizes.cell(),
        )
        for row in rows
    ]
    widths = [max(len(str(cells[i])) for cells in [header, *lines]) for i in range(len(header))]

    def render(cells):
        return "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()

    return "\n".join([render(header), render(["-" * w for w in widths]), *map(render, lines)])


def format_headline(figures: dict[str, Any]) -> str:
    fg, dyn = figures["fullgraph"], figures["dynamo"]
    return (
        f"{figures['programs']} programs ({figures['breakless_programs']} without marked breaks)\n"
        f"captured as one graph:        fullgraph {fg['one_graph_percent']:5.1f}%   "
        f"Dynamo {dyn['one_graph_percent']:5.1f}%\n"
        f"equal to eager over 3 calls:  fullgraph {fg['equal_percent']:5.1f}%   "
        f"Dynamo {dyn['equal_percent']:5.1f}%\n"
        f"sizes settle ({figures['resizable_programs']} resizable): fullgraph "
        f"{fg['sizes_settle_percent']:5.1f}%   Dynamo {dyn['sizes_settle_percent']:5.1f}%"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--json", type=Path, metavar="PATH", help="write the figures and the per-program rows here"
    )
    parser.add_argument("--only", nargs="+", metavar="NAME", help="measure only these programs")
    parser.add_argument(
        "--section",
        choices=("corpus", "capture", "all"),
        default="corpus",
        help="tests/programs (corpus), issue #17's bench/capture_programs (capture), or both",
    )
    args = parser.parse_args(argv)

    # Dynamo logs every graph break as a warning; the table says it already.
    logging.getLogger("torch._dynamo").setLevel(logging.ERROR)
    corpus_names = loader.program_names() if args.section != "capture" else []
    capture_names = (
        capture_section.capture_programs.program_names() if args.section != "corpus" else []
    )
    if args.only:
        unknown = sorted(set(args.only) - set(corpus_names) - set(capture_names))
        if unknown:
            parser.error(
                f"no such program: {', '.join(unknown)} (see tests/programs/, bench/capture_programs/)"
            )
        # In the order given, as the corpus section always measured --only.
        corpus_names = [name for name in args.only if name in corpus_names]
        capture_names = [name for name in args.only if name in capture_names]
    figures: dict[str, Any] = {"torch": torch.__version__}
    if capture_names:
        started = time.perf_counter()
        capture_rows = capture_section.measure(capture_names, _quiet)
        figures["capture"] = {
            "seconds": round(time.perf_counter() - started, 1),
            "summary": capture_section.summary(capture_rows),
            "rows": [dataclasses.asdict(row) for row in capture_rows],
        }
        print(capture_section.format_rows(capture_rows))
        print()
        print(capture_section.format_summary(figures["capture"]["summary"]))
        print()
        print(capture_section.format_details(capture_rows))
        print()
    if not corpus_names:
        if args.json:
            args.json.write_text(json.dumps(figures, indent=2) + "\n")
        return 0
    names = corpus_names
    started = time.perf_counter()
    rows = measure(names)
    figures.update(headline(rows))
    figures["seconds"] = round(time.perf_counter() - started, 1)
    print(format_table(rows))
    print()
    print(format_headline(figures))
    if args.json:
        figures["rows"] = [dataclasses.asdict(row) for row in rows]
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
