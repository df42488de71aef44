"""The corpus programs themselves: they run eagerly, are deterministic, and their markers are sound.

These tests need nothing from fullgraph, so they keep the corpus honest while
the runtime is being built.  They also pin down what TorchDynamo makes of the
corpus (recorded below, each exception with its reason): breakless programs
are captured whole except where Dynamo is known to split them, and a program
that prints, reads tensor data or produces data-dependent shapes makes Dynamo
break too, except where Dynamo handles the construct.  Dynamo is not assumed
to be perfect; a change in its verdict shows up here and is recorded.
"""

from __future__ import annotations

import ast
import functools

import pytest
import torch
from programs import loader

NAMES = loader.program_names()


def _marked(name: str) -> list:
    """Where the program reads tensor data into Python: graph breaks and data checks."""
    return [site for kind in loader.MARKER_KINDS for site in loader.expected_breaks(name, kind)]


BREAKING = [name for name in NAMES if _marked(name)]
BREAKLESS = [name for name in NAMES if not _marked(name)]
SEEDS = (0, 1, 2)

# What TorchDynamo (torch 2.13, default config, `torch._dynamo.explain`) does
# with the corpus, checked by running it.  Dynamo's own `graph_break_count` is
# `graph_count - 1`, which misses a break after the last graph and a frame
# Dynamo skips altogether (0 graphs), so "whole" below means one graph and no
# break reason at all.
DYNAMO_VERSION = "2.13."
# Breakless programs Dynamo does not capture whole, and why.
DYNAMO_SPLITS_BREAKLESS: dict[str, str] = {
    "seq2seq_teacher_forcing": "nn.GRU is not traced (allow_rnn is off): step_unsupported",
    "word_language_model": "nn.LSTM is not traced (allow_rnn is off): step_unsupported",
    # Data-dependent sizes: one graph in fullgraph (unbacked symbols), a break in Dynamo
    # unless capture_dynamic_output_shape_ops is set.
    "masked_depth_loss": "x[mask] is a dynamic-output-shape op: break",
    "nonzero_selected_tokens": "nonzero is a dynamic-output-shape op: break",
    "prototypical_network": "x[mask] is a dynamic-output-shape op: break",
    "class_balanced_unique": "unique is a dynamic-output-shape op: break",
}
# Programs with FG201/FG202/FG203 markers that Dynamo nevertheless captures whole.
DYNAMO_HANDLES: dict[str, str] = {
    "tensor_assert_nonnegative": "an assert on tensor data becomes torch._assert_async",
    "activation_snapshot_numpy": ".numpy() is traced through torch._numpy",
}


def _run(name: str, seed: int):
    program = loader.load_program(name)
    return program.make_model()(*program.make_inputs(seed))


@functools.cache
def _dynamo_explain(name: str):
    import torch._dynamo

    program = loader.load_program(name)
    torch._dynamo.reset()
    try:
        # explain() compiles nothing: its backend only collects the graphs.
        return torch._dynamo.explain(program.make_model())(*program.make_inputs(0))
    finally:
        torch._dynamo.reset()


def test_corpus_is_large_and_mixed():
    assert len(NAMES) >= 60, f"only {len(NAMES)} programs"
    # Roughly two thirds breakless, one third with breaks.
    assert 0.2 <= len(BREAKING) / len(NAMES) <= 0.45, (len(BREAKING), len(NAMES))


@pytest.mark.parametrize("name", NAMES)
def test_program_declares_the_format(name):
    program = loader.load_program(name)
    assert program.__doc__ and program.__doc__.strip(), "needs a one-line docstring"
    assert callable(program.make_model)
    assert callable(program.make_inputs)
    assert isinstance(program.make_inputs(0), tuple)
    assert isinstance(program.EXPECTED_GRAPHS, int) and program.EXPECTED_GRAPHS >= 1
    runs = loader.expected_monitor_runs(program)
    assert runs is None or 1 <= runs <= len(SEEDS)


@pytest.mark.parametrize("name", NAMES)
def test_program_runs_and_data_matters(name):
    outputs = [loader.output_leaves(_run(name, seed)) for seed in SEEDS]
    for seed, leaves in zip(SEEDS, outputs):
        assert any(isinstance(leaf, torch.Tensor) for leaf in leaves), f"seed {seed}: no tensor"
    for other in outputs[1:]:
        with pytest.raises(AssertionError):
            torch.testing.assert_close(outputs[0], other)


@pytest.mark.parametrize("name", NAMES)
def test_program_is_deterministic(name):
    for seed in SEEDS:
        torch.testing.assert_close(
            loader.comparable_output(_run(name, seed)),
            loader.comparable_output(_run(name, seed)),
            msg=lambda m, seed=seed: f"seed {seed}: two fresh models disagree: {m}",
        )


@pytest.mark.parametrize(
    "name", [name for name in NAMES if hasattr(loader.load_program(name), "observe_state")]
)
def test_observed_state_is_deterministic(name):
    program = loader.load_program(name)
    first, second = program.make_model(), program.make_model()
    for seed in SEEDS:
        first(*program.make_inputs(seed))
        second(*program.make_inputs(seed))
    torch.testing.assert_close(
        loader.comparable_output(program.observe_state(first)),
        loader.comparable_output(program.observe_state(second)),
    )


@pytest.mark.parametrize("name", BREAKING)
def test_break_markers_are_sound(name):
    path = loader.program_path(name)
    source_lines = path.read_text().splitlines()
    # Lines that hold code (not only a comment): a marker must sit on one.
    code_lines = {
        node.lineno for node in ast.walk(ast.parse(path.read_text())) if hasattr(node, "lineno")
    }
    for expected in _marked(name):
        assert expected.file == str(path)
        assert expected.code in loader.MARKER_CODES, expected
        assert 1 <= expected.line <= len(source_lines)
        assert expected.line in code_lines, f"marker on a line without code: {expected}"
    program = loader.load_program(name)
    # A break splits the run; the program must say how many graphs result.
    assert program.EXPECTED_GRAPHS >= 1


def test_markers_are_found_only_in_comments(tmp_path, monkeypatch):
    fake = tmp_path / "fake_program.py"
    fake.write_text(
        'x = "# BREAK: FG201"\nprint(x)  # BREAK: FG201, FG202\n'
        "y = int(x)  # BREAK: FG202; CHECK: FG202\nz = bool(x)  # CHECK: FG202\n"
        "print(y)  # DEFER: FG201\n"
    )
    monkeypatch.setattr(loader, "PROGRAMS_DIR", tmp_path)
    assert loader.expected_breaks("fake_program") == [
        loader.ExpectedBreak(str(fake), 2, "FG201"),
        loader.ExpectedBreak(str(fake), 2, "FG202"),
        loader.ExpectedBreak(str(fake), 3, "FG202"),
    ]
    assert loader.expected_breaks("fake_program", "DEFER") == [
        loader.ExpectedBreak(str(fake), 5, "FG201")
    ]
    assert loader.expected_breaks("fake_program", "CHECK") == [
        loader.ExpectedBreak(str(fake), 3, "FG202"),
        loader.ExpectedBreak(str(fake), 4, "FG202"),
    ]


def _dynamo_captures_whole(explained) -> bool:
    return explained.graph_count == 1 and not explained.break_reasons


needs_dynamo_version = pytest.mark.skipif(
    not torch.__version__.startswith(DYNAMO_VERSION),
    reason=f"the Dynamo verdicts were recorded with torch {DYNAMO_VERSION}x",
)


@needs_dynamo_version
@pytest.mark.parametrize("name", BREAKLESS)
def test_dynamo_on_breakless_program(name, record_property):
    """Dynamo's verdict matches the recorded one (the corpus does not assume Dynamo is perfect)."""
    explained = _dynamo_explain(name)
    reasons = [str(reason.reason).splitlines()[0] for reason in explained.break_reasons]
    record_property("dynamo_graph_count", explained.graph_count)
    record_property("dynamo_break_reasons", reasons)
    if name in DYNAMO_SPLITS_BREAKLESS:
        assert not _dynamo_captures_whole(explained), (
            f"Dynamo now captures {name} whole; remove it from DYNAMO_SPLITS_BREAKLESS"
        )
    else:
        assert _dynamo_captures_whole(explained), (
            f"Dynamo splits {name} ({explained.graph_count} graphs: {reasons}); "
            "record it in DYNAMO_SPLITS_BREAKLESS with the reason"
        )


@needs_dynamo_version
@pytest.mark.parametrize(
    "name",
    [name for name in BREAKING if {b.code for b in _marked(name)} & {"FG201", "FG202", "FG203"}],
)
def test_dynamo_also_breaks_where_python_must_run(name):
    explained = _dynamo_explain(name)
    if name in DYNAMO_HANDLES:
        assert _dynamo_captures_whole(explained), (
            f"Dynamo now breaks on {name}; remove it from DYNAMO_HANDLES"
        )
    else:
        assert not _dynamo_captures_whole(explained), f"Dynamo captured {name} whole"
