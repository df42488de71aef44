"""The rules on the shared corpus of real-style model programs (tests/programs/).

Every program lints without error, with positions inside the file; every
fix applies cleanly; the fixed programs compute what the originals compute;
and the breaks the corpus marks (``# BREAK: FG2xx``) that a static rule can
see are reported on the marked line.
"""

from __future__ import annotations

import contextlib
import io
import sys
import types
import warnings
from pathlib import Path

import libcst as cst
import pytest
from refactors_helpers import HAVE_TORCH, needs_torch

from fullgraph.refactors import apply_edits, fix_source, lint_source

if HAVE_TORCH:  # only running the programs needs it; linting and fixing them does not
    import torch

PROGRAMS = Path(__file__).resolve().parents[1] / "programs"
NAMES = sorted(p.stem for p in PROGRAMS.glob("*.py") if p.stem not in ("__init__", "loader"))
FIX_CODES = {"FG101", "FG102", "FG103"}
# Marked breaks a static rule reports, by program: (rule code, text on the marked line).
EXPECTED = {
    "class_balanced_unique": ("FG105", "torch.unique"),
    "debug_print_nested_module": ("FG102", "print"),
    "detection_score_filter": ("FG105", "[scores > self.score_thresh]"),
    "early_exit_confidence": ("FG104", "confidence.item()"),
    "greedy_decode_early_stop": ("FG101", "(token == self.eos_id).all()"),
    "item_branch_gate": ("FG104", "energy.item()"),
    "logging_attention": ("FG102", "logger.info"),
    "masked_depth_loss": ("FG105", "diff[mask]"),
    "moe_token_dispatch": ("FG105", "torch.where(expert_index == e)"),
    "nan_guard_raise": ("FG103", "torch.isfinite(logits).all()"),
    "nonzero_selected_tokens": ("FG105", "torch.nonzero"),
    "padded_length_trim": ("FG104", "int(lengths.max())"),
    "power_iteration_tolerance": ("FG104", "err.item()"),
    "print_shapes_cnn": ("FG102", "print"),
    "prototypical_network": ("FG105", "z_support[support_y == c]"),
    "tensor_assert_nonnegative": ("FG103", "(rate >= 0).all()"),
    "tensor_assert_probability_range": ("FG103", "(probs >= 0).all()"),
    "tolist_variable_pooling": ("FG104", "lengths.tolist()"),
    "verbose_debug_prints": ("FG102", "print"),
    "warnings_shared_helper": ("FG102", "warnings.warn"),
}


def _source(name: str) -> str:
    return (PROGRAMS / f"{name}.py").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", NAMES)
def test_corpus_program_lints_with_valid_positions_and_fixes(name: str) -> None:
    source = _source(name)
    lines = source.splitlines()
    for finding in lint_source(source, f"{name}.py"):
        assert 1 <= finding.line <= finding.end_line <= len(lines)
        assert 0 <= finding.column <= len(lines[finding.line - 1])
        if finding.fix is not None:
            cst.parse_module(apply_edits(source, finding.fix.edits))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_marked_break_is_reported_on_its_line(name: str) -> None:
    code, text = EXPECTED[name]
    lines = _source(name).splitlines()
    # A static finding stands at the line where the program reads tensor data, whether the
    # runtime splits the graph there (BREAK), checks the data in front of it (CHECK) or
    # keeps a data-dependent size in the graph (GRAPH).
    kinds = ("# BREAK", "# CHECK", "# DEFER", "; DEFER", "# GRAPH")
    marked = {
        i + 1
        for i, line in enumerate(lines)
        if any(f"{kind}:" in line for kind in kinds)
        and text in line
    }
    assert marked, f"the corpus no longer marks `{text}` in {name}"
    reported = {f.line for f in lint_source(_source(name)) if f.code == code}
    assert marked & reported


def _load(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__file__ = str(PROGRAMS / f"{name}.py")
    sys.modules[name] = module
    exec(compile(source, module.__file__, "exec"), module.__dict__)  # noqa: S102 - corpus code
    return module


def _run(module: types.ModuleType, seed: int):
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return module.make_model()(*module.make_inputs(seed)), None
        except Exception as error:  # noqa: BLE001 - compared, not handled
            return None, (type(error), str(error))


FIXED = [n for n in NAMES if fix_source(_source(n), codes=FIX_CODES) != _source(n)]


def test_the_corpus_has_fixable_programs() -> None:
    assert len(FIXED) >= 6, FIXED


@needs_torch
@pytest.mark.parametrize("name", FIXED)
def test_fixed_corpus_program_computes_the_same(name: str) -> None:
    original = _load(_source(name), f"corpus_{name}_original")
    fixed = _load(fix_source(_source(name), codes=FIX_CODES), f"corpus_{name}_fixed")
    for seed in range(3):
        (result_a, error_a), (result_b, error_b) = _run(original, seed), _run(fixed, seed)
        assert error_a == error_b
        flat_a = torch.utils._pytree.tree_flatten(result_a)[0]
        flat_b = torch.utils._pytree.tree_flatten(result_b)[0]
        assert len(flat_a) == len(flat_b)
        for a, b in zip(flat_a, flat_b):
            assert torch.equal(a, b) if isinstance(a, torch.Tensor) else a == b
