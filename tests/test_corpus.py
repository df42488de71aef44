"""The corpus against the runtime: compiled outputs equal eager, hits don't re-monitor, reports match markers.

For every program in ``tests/programs`` (see ``docs/corpus.md``):

- ``fullgraph.runtime.compile(make_model(), backend="eager")`` called on the
  inputs of seeds 0, 1 and 2 returns what a fresh eager model returns;
- the state the calls leave behind (``observe_state(model)``, where a program
  defines it) equals eager's;
- the number of monitoring runs is the program's expectation (1 unless the
  program says otherwise: later calls hit the first record);
- ``fullgraph.runtime.explain`` on seed 0 reports ``EXPECTED_GRAPHS`` graphs
  and exactly the breaks marked ``# BREAK: FG2xx`` in the program's source,
  each placed in the program (user code, not torch) at the end of its stack.

Skipped while the runtime does not provide ``compile`` / ``explain`` yet.
"""

from __future__ import annotations

import json
import os
import sys
from types import ModuleType

import pytest
import torch
from programs import loader

from fullgraph import runtime

NAMES = loader.program_names()
SEEDS = (0, 1, 2)

needs_compile = pytest.mark.skipif(
    not hasattr(runtime, "compile"), reason="fullgraph.runtime.compile is not built yet"
)
needs_explain = pytest.mark.skipif(
    not hasattr(runtime, "explain"), reason="fullgraph.runtime.explain is not built yet"
)

# Where the runtime, as last checked, falls short of a program's expectation.
# Each entry is a known runtime gap, not a wrong expectation; the test runs and
# is reported as xfail (or xpass once the gap is closed: then delete the entry).
COMPILE_GAPS: dict[str, str] = {}
EXPLAIN_GAPS: dict[str, str] = {}


def _params(gaps: dict[str, str]) -> list:
    return [
        pytest.param(name, marks=pytest.mark.xfail(reason=gaps[name], strict=False))
        if name in gaps
        else name
        for name in NAMES
    ]


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


@needs_compile
@pytest.mark.parametrize("name", _params(COMPILE_GAPS))
def test_compiled_matches_eager_and_hits_skip_monitoring(name):
    program = loader.load_program(name)
    eager_model = program.make_model()
    model = program.make_model()
    compiled = runtime.compile(model, backend="eager")
    for seed in SEEDS:
        # Separate input objects, in case a program updates its inputs in place.
        expected = eager_model(*program.make_inputs(seed))
        actual = compiled(*program.make_inputs(seed))
        torch.testing.assert_close(
            loader.comparable_output(actual),
            loader.comparable_output(expected),
            msg=lambda m, seed=seed: f"call with seed {seed} differs from eager: {m}",
        )
    if hasattr(program, "observe_state"):
        # State the calls leave outside their results: counters, buffers, snapshots.
        torch.testing.assert_close(
            loader.comparable_output(program.observe_state(model)),
            loader.comparable_output(program.observe_state(eager_model)),
            msg=lambda m: f"state after {len(SEEDS)} calls differs from eager: {m}",
        )
    stats = compiled.stats
    expected_runs = loader.expected_monitor_runs(program)
    if expected_runs is None:
        # Policy-dependent, but a call is monitored at most once.
        assert 1 <= stats.monitor_runs <= len(SEEDS), stats
    else:
        assert stats.monitor_runs == expected_runs, stats
        if expected_runs == 1:
            assert stats.hits == len(SEEDS) - 1, stats


@needs_compile
@pytest.mark.parametrize("name", _params(COMPILE_GAPS))
def test_compiled_matches_eager_as_the_batch_size_changes(name):
    """Sizes that vary become symbolic (docs/runtime.md): the results must not notice."""
    program = loader.load_program(name)
    eager_model = program.make_model()
    compiled = runtime.compile(program.make_model(), backend="eager")
    for call, extra in enumerate(loader.BATCH_GROWTH):
        inputs = loader.with_batch_grown(program.make_inputs(call), extra)
        try:
            torch.manual_seed(call)
            expected = eager_model(*inputs)
        except Exception as error:  # noqa: BLE001 - a program written for one batch size
            pytest.skip(f"eager rejects a batch {extra} rows larger: {type(error).__name__}")
        inputs = loader.with_batch_grown(program.make_inputs(call), extra)
        torch.manual_seed(call)
        actual = compiled(*inputs)
        torch.testing.assert_close(
            loader.comparable_output(actual),
            loader.comparable_output(expected),
            msg=lambda m, extra=extra: f"batch grown by {extra} differs from eager: {m}",
        )


@needs_explain
@pytest.mark.parametrize("name", _params(EXPLAIN_GAPS))
def test_explain_reports_expected_graphs_and_breaks(name):
    program = loader.load_program(name)
    assert not isinstance(runtime.explain, ModuleType), (
        "fullgraph.runtime.explain is the submodule, not the function: importing "
        "fullgraph.runtime.explain rebinds the package attribute"
    )
    report = runtime.explain(program.make_model(), *program.make_inputs(0))
    path = str(loader.program_path(name))
    source_lines = loader.program_path(name).read_text().splitlines()
    breaks = report.to_json()["breaks"]
    for brk in breaks:
        # The program is the only user code on the path: a break must point
        # into it (not into torch or the standard library) ...
        assert _same_file(brk["file"], path), f"break placed outside user code: {brk}"
        # ... at a range of real code that ends the user call stack.
        assert 0 <= brk["column"] < len(source_lines[brk["line"] - 1]), brk
        assert brk["stack"] and brk["stack"][-1]["line"] == brk["line"], brk
    reported = {(brk["line"], brk["code"]) for brk in breaks}
    expected = {(brk.line, brk.code) for brk in loader.expected_breaks(name)}
    assert reported == expected, (
        f"breaks in {path}: reported {sorted(reported)}, marked {sorted(expected)}"
    )
    for key, kind in (("data_checks", "CHECK"), ("deferred_effects", "DEFER")):
        kept = {(c["line"], c["code"]) for c in report.to_json()[key]}
        marked = {(c.line, c.code) for c in loader.expected_breaks(name, kind)}
        assert kept == marked, f"{key} in {path}: reported {sorted(kept)}, marked {sorted(marked)}"
    assert report.graph_count == program.EXPECTED_GRAPHS


def _coverage_script():
    """bench/coverage.py as a module (the bench folder is not a package)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "bench" / "coverage.py"
    spec = importlib.util.spec_from_file_location("fullgraph_bench_coverage", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


# One program each system captures whole and one both must split.
BENCH_PROGRAMS = ["resnet_basic_block", "print_shapes_cnn"]


def test_coverage_script_measures_both_systems(tmp_path, capsys):
    coverage = _coverage_script()
    out = tmp_path / "coverage.json"
    assert coverage.main(["--only", *BENCH_PROGRAMS, "--json", str(out)]) == 0
    figures = json.loads(out.read_text())
    assert figures["programs"] == 2
    assert [row["name"] for row in figures["rows"]] == BENCH_PROGRAMS
    assert figures["dynamo"]["one_graph_percent"] == 50.0
    # torch.compile(fullgraph=True) refuses the print: not equal.
    assert figures["dynamo"]["equal_percent"] == 50.0
    if hasattr(runtime, "explain") and hasattr(runtime, "compile"):
        # The print shows only a shape: fullgraph makes it after one graph.
        assert figures["fullgraph"]["one_graph_percent"] == 100.0
        assert figures["fullgraph"]["equal_percent"] == 100.0
    printed = capsys.readouterr().out
    assert "captured as one graph:" in printed and "print_shapes_cnn" in printed


def test_coverage_script_counts_a_missing_runtime_as_failures(monkeypatch, capsys):
    coverage = _coverage_script()
    monkeypatch.setattr(
        coverage, "_load_runtime", lambda: (None, None, ImportError("no runtime yet"))
    )
    rows = coverage.measure(["resnet_basic_block"])
    assert not rows[0].fullgraph_one_graph.ok and not rows[0].fullgraph_equal.ok
    assert "ImportError" in coverage.format_table(rows)
    assert rows[0].dynamo_one_graph.ok  # Dynamo is still measured
