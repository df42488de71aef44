"""The benchmark harness's own logic: measuring, failing soft, judging targets, reporting.

These run in seconds with the eager backend and synthetic results; the end-to-end
run of the script is test_bench_tiny.py.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from bench import report, targets
from bench.compilers import EagerRunner, TorchCompileRunner
from bench.local_models import corpus_cases, example_cases
from bench.measure import compare_outputs, peak_memory_bytes, tensors_of
from bench.suite import FAILED, NOT_AVAILABLE, OK, CompilerResult, ModelResult, Settings, run_model
from bench.zoo import TINY_CASE, ModelCase, ModelInputs

QUICK = Settings(batch_sizes=(1, 2), repetitions=3, warmup=1, stage_timeout_s=120)


# --- measuring -------------------------------------------------------------------------


def test_output_comparison_flags_values_shapes_and_counts():
    base = (torch.ones(3), {"b": torch.zeros(2), "a": torch.arange(2)})
    assert compare_outputs(base, (torch.ones(3), {"a": torch.arange(2), "b": torch.zeros(2)})).equal
    off = compare_outputs(base, (torch.ones(3) + 0.5, {"b": torch.zeros(2), "a": torch.arange(2)}))
    assert not off.equal and off.max_abs_diff == pytest.approx(0.5)
    assert "output 0" in off.message
    assert not compare_outputs(base, (torch.ones(4), base[1])).equal
    assert not compare_outputs(base, (torch.ones(3),)).equal


def test_tensors_of_reads_model_output_style_results():
    @dataclasses.dataclass
    class Output:
        logits: torch.Tensor
        hidden: tuple[torch.Tensor, ...]

    out = Output(torch.ones(1), (torch.zeros(1), torch.full((1,), 2.0)))
    assert [t.item() for t in tensors_of(out)] == [1.0, 0.0, 2.0]


def test_cpu_peak_memory_counts_temporaries_of_the_call():
    mib = 1024 * 1024
    x = torch.zeros(mib // 4)  # 1 MiB, live before the call: not counted

    def two_temporaries(t):
        return ((t + 1) * 2).sum()  # t + 1 and its product coexist: 2 MiB at the peak

    peak = peak_memory_bytes(two_temporaries, ModelInputs(args=(x,)), "cpu")
    assert 2 * mib <= peak < 3 * mib


# --- failing soft ----------------------------------------------------------------------


class _BrokenCompiler:
    """Stands in for fullgraph: compiles nothing and raises like a compiler bug would."""

    name = "fullgraph"

    def unavailable_reason(self):
        return None

    def graph_stats(self, model, inputs):
        raise RuntimeError("explain exploded")

    def compile(self, model):
        raise RuntimeError("compile exploded")

    def compile_with(self, model, backend):
        raise RuntimeError("compile exploded")


class _AbsentCompiler(_BrokenCompiler):
    def unavailable_reason(self):
        return "not built yet"


def _runners(third):
    return [EagerRunner(), TorchCompileRunner("eager"), third]


def test_a_failing_compiler_is_recorded_and_the_others_are_measured():
    result = run_model(TINY_CASE, _runners(_BrokenCompiler()), QUICK)
    assert result.status == OK
    broken = result.compilers["fullgraph"]
    assert broken.status == FAILED
    assert broken.error == "compile: RuntimeError: compile exploded"
    assert "explain: RuntimeError: explain exploded" in broken.notes
    dynamo = result.compilers["torch.compile"]
    assert dynamo.status == OK and set(dynamo.step_s) == {"1", "2"}
    assert dynamo.outputs_equal is True


def test_an_absent_compiler_is_not_available_not_failed():
    result = run_model(TINY_CASE, _runners(_AbsentCompiler()), QUICK)
    absent = result.compilers["fullgraph"]
    assert (absent.status, absent.error) == (NOT_AVAILABLE, "not built yet")
    assert absent.step_s == {}


def test_a_model_that_cannot_be_built_fails_alone():
    def build():
        raise ValueError("bad config")

    case = ModelCase("broken", "test", build, TINY_CASE.make_inputs)
    result = run_model(case, _runners(_AbsentCompiler()), QUICK)
    assert (result.status, result.error) == (FAILED, "build: ValueError: bad config")


def test_a_wrong_compiled_output_is_reported():
    class WrongBackend(TorchCompileRunner):
        def compile(self, model):
            return lambda *args: model(*args) + 1

    result = run_model(TINY_CASE, [EagerRunner(), WrongBackend("eager")], QUICK)
    entry = result.compilers["torch.compile"]
    assert entry.outputs_equal is False
    assert any("differs" in note for note in entry.notes)


class _Counter(torch.nn.Module):
    """Adds the number of calls so far: every call's output differs, in eager too."""

    def __init__(self):
        super().__init__()
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x):
        self.calls += 1
        return x + self.calls


def test_a_stateful_program_is_not_judged_against_its_first_output():
    case = ModelCase("counter", "test", _Counter, TINY_CASE.make_inputs)
    result = run_model(case, [EagerRunner(), TorchCompileRunner("eager")], QUICK)
    assert result.status == OK and result.outputs_comparable is False
    entry = result.compilers["torch.compile"]
    assert entry.outputs_equal is None and not any("differs" in n for n in entry.notes)
    assert set(entry.step_s) == {"1", "2"}


# --- judging and reporting ---------------------------------------------------------------


def _result(name, *, dynamo_graphs=1, fg_graphs=1, tc_step=1.0, fg_step=1.0, outside=0.001):
    eager = CompilerResult("eager", step_s={"1": 2.0, "8": 2.0})
    compiled = CompilerResult(
        "torch.compile",
        graphs=dynamo_graphs,
        breaks=dynamo_graphs - 1,
        step_s={"1": tc_step, "8": tc_step},
        cold_start_s=10.0,
    )
    fullgraph = CompilerResult(
        "fullgraph",
        graphs=fg_graphs,
        breaks=0,
        step_s={"1": fg_step, "8": fg_step},
        cold_start_s=5.0,
        outside_graph_s=outside,
    )
    return ModelResult(
        name,
        "transformers",
        input_sizes=["1", "8"],
        compilers={"eager": eager, "torch.compile": compiled, "fullgraph": fullgraph},
    )


def _verdict(results, target_prefix):
    (verdict,) = [v for v in targets.evaluate(results) if v.target.startswith(target_prefix)]
    return verdict


def test_targets_name_the_models_that_miss():
    results = [
        _result("fast"),
        _result("slow", fg_step=1.25),
        _result("broken-up", dynamo_graphs=3, fg_graphs=3),
        _result("chatty", outside=0.05),
    ]
    step = _verdict(results, "steady-state step")
    assert step.status == targets.MISSED and "slow [1] (1.25)" in step.detail
    graphs = _verdict(results, "fullgraph's graph count")
    assert graphs.status == targets.MISSED and "broken-up (3 vs 3)" in graphs.detail
    share = _verdict(results, "guard + mock")
    assert share.status == targets.MISSED and "chatty (5.0%)" in share.detail
    assert _verdict(results, "cold start").status == targets.MET
    # Speedups over eager 2, 1.6, 2, 2: geometric mean 1.891, above MagPy's 1.55.
    speedup = _verdict(results, "geometric-mean speedup")
    assert speedup.status == targets.MET and "fullgraph 1.891×" in speedup.detail


def test_a_model_dynamo_cannot_capture_at_all_is_no_graph_count_miss():
    # torch._dynamo.explain reports 0 graphs when it skips the frame and runs it eagerly.
    skipped_by_dynamo = _result("decode", dynamo_graphs=0, fg_graphs=5)
    skipped_by_dynamo.compilers["torch.compile"].breaks = 0
    assert _verdict([skipped_by_dynamo], "fullgraph's graph count").status == targets.MET


def test_a_fullgraph_that_never_replayed_misses_speed_and_cold_start():
    fallback = _result("bert", fg_step=0.9)
    fallback.compilers["fullgraph"].replayed = False
    fallback.compilers["fullgraph"].outside_graph_s = None
    assert "fell back to eager" in _verdict([fallback], "steady-state step").detail
    assert "fell back to eager" in _verdict([fallback], "cold start").detail
    assert "no compiled graph ran" in _verdict([fallback], "guard + mock").detail


def test_targets_are_not_applicable_without_fullgraph():
    lone = _result("bert")
    lone.compilers["fullgraph"] = CompilerResult("fullgraph", status=NOT_AVAILABLE)
    assert {v.status for v in targets.evaluate([lone])} == {targets.NOT_APPLICABLE}


def test_report_marks_failures_in_the_tables():
    result = _result("whisper")
    failed = result.compilers["fullgraph"]
    failed.status, failed.error, failed.step_s = FAILED, "compile: KeyError: 'x'", {}
    env = {
        "date": "today", "device": "cpu", "cpu": "cpu", "cpu_count": 2, "torch_threads": 2,
        "platform": "linux", "python": "3.11", "torch": "2.13", "transformers": "5",
        "fullgraph": "0.1", "backend": "inductor",
    }  # fmt: skip
    settings = {"batch_sizes": (1, 8), "warmup": 3, "repetitions": 30, "duration_s": 60}
    markdown = report.render([result], targets.evaluate([result]), env, settings, None)
    assert "| whisper | 2000 | 1000 | failed |" in markdown  # step table, ms: eager 2 s, tc 1 s
    assert "| whisper | fullgraph | compile: KeyError: 'x' |" in markdown


# --- the repository's programs -------------------------------------------------------------


def test_corpus_programs_and_examples_load_as_fixed_input_cases():
    cases = corpus_cases() + example_cases()
    if not cases:
        pytest.skip("no corpus programs or examples in this checkout")
    assert all(case.fixed_inputs for case in cases)
    assert any(case.name.startswith("example:") for case in cases) == bool(example_cases())
    case = cases[0]
    model, inputs = case.build(), case.make_inputs(1)
    assert tensors_of(model(*inputs.args, **inputs.kwargs))


def test_runs_measured_separately_merge_into_one_report():
    from bench.run import merge_runs

    def run(seconds, *models):
        return {"environment": {}, "settings": {"duration_s": seconds}, "models": list(models)}

    bert, skipped_mlp = {"name": "bert", "status": "ok"}, {"name": "mlp", "status": "skipped"}
    measured_mlp, cnn = {"name": "mlp", "status": "ok"}, {"name": "cnn", "status": "ok"}
    merged = merge_runs([run(60.0, bert, skipped_mlp), run(30.0, measured_mlp, cnn)])
    assert merged["models"] == [bert, measured_mlp, cnn]
    assert merged["settings"]["duration_s"] == 90.0
