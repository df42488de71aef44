"""End-to-end guarantees of the fixes on fixture programs (tests/refactors/fixtures/).

Each fixture is a small program with graph-break patterns; it declares the
rule codes it exercises (``CODES``), ``make_model()`` / ``make_inputs(seed)``
(inputs alternate so that every branch and every validation outcome runs) and
the exact break counts before and after the fix.  For each fixture:
the rewritten code parses, keeps every comment, adds each import once, is a
fixed point of ``fix_source``; it computes the same results, prints/logs/warns
the same things and raises the same exceptions as the original; and the
breaks are gone for TorchDynamo and for fullgraph's runtime.
"""

from __future__ import annotations

import contextlib
import functools
import io
import logging
import re
import sys
import tokenize
import types
import warnings
from pathlib import Path

import libcst as cst
import pytest
from refactors_helpers import NO_TORCH, needs_runtime

# The fixtures are programs that import torch: every test here loads them.
torch = pytest.importorskip("torch", reason=NO_TORCH)

import fullgraph.refactors.support
import fullgraph.runtime
from fullgraph.refactors import fix_source, lint_source

FIXTURES = Path(__file__).parent / "fixtures"
NAMES = sorted(p.stem for p in FIXTURES.glob("*.py"))
SEEDS = range(8)
FIX_CODES = {"FG101", "FG102", "FG103"}


def _source(name: str) -> str:
    return (FIXTURES / f"{name}.py").read_text(encoding="utf-8")


def _load(source: str, name: str, fixture: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__file__ = str(FIXTURES / f"{fixture}.py")
    sys.modules[name] = module  # dataclasses and pickling look modules up by name
    exec(compile(source, module.__file__, "exec"), module.__dict__)  # noqa: S102 - fixture code
    return module


def _fixed(name: str) -> str:
    return fix_source(_source(name), f"{name}.py", codes=FIX_CODES)


def _comments(source: str) -> list[str]:
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return sorted(t.string for t in tokens if t.type == tokenize.COMMENT)


@pytest.mark.parametrize("name", NAMES)
def test_fix_rewrites_parses_and_keeps_comments(name: str) -> None:
    original, fixed = _source(name), _fixed(name)
    assert fixed != original, f"no fix applied to {name}"
    cst.parse_module(fixed)
    assert _comments(original) == _comments(fixed)
    import_lines = [line for line in fixed.splitlines() if line.startswith(("import ", "from "))]
    assert len(import_lines) == len(set(import_lines)), import_lines
    assert fix_source(fixed, codes=FIX_CODES) == fixed
    module = _load(original, f"fixture_{name}_codes", name)
    left = [f for f in lint_source(fixed) if f.code in module.CODES and f.fix is not None]
    assert left == []
    before = [f for f in lint_source(original) if f.code in module.CODES]
    assert before and all(f.fix is not None for f in before)


class _Observed:
    """What a call did: its result or exception, and what it printed, logged and warned."""

    def __init__(self, call) -> None:
        stdout = io.StringIO()
        records: list[str] = []
        handler = logging.Handler()
        handler.emit = lambda record: records.append(record.getMessage())
        root = logging.getLogger()
        root.addHandler(handler)
        try:
            with contextlib.redirect_stdout(stdout), warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    self.result, self.error = call(), None
                except Exception as error:  # noqa: BLE001 - compared, not handled
                    self.result, self.error = None, (type(error), str(error))
        finally:
            root.removeHandler(handler)
        # A deferred print shows a cloned, detached tensor: the autograd node is not data.
        self.stdout = re.sub(r",\s*grad_fn=<\w+>", "", stdout.getvalue())
        self.logged = records
        # torch warns when a tensor that requires grad is formatted as a number; the
        # deferred copy is detached, so only the original call gets that warning.
        # torch.cond compiles its branches with Dynamo, which warns about the interpreter
        # itself on some versions ("Guards may run slower on Python 3.13.0"): not the
        # program's warning.
        self.warned = [
            str(w.message)
            for w in caught
            if not str(w.message).startswith("Converting a tensor with requires_grad")
            and not str(w.message).startswith("Guards may run slower on Python")
        ]


def _same(a, b) -> bool:
    flat_a, flat_b = torch.utils._pytree.tree_flatten(a)[0], torch.utils._pytree.tree_flatten(b)[0]
    if len(flat_a) != len(flat_b):
        return False
    return all(
        torch.equal(x, y) if isinstance(x, torch.Tensor) else x == y for x, y in zip(flat_a, flat_b)
    )


@pytest.mark.parametrize("name", NAMES)
def test_fix_keeps_semantics_on_random_inputs(name: str) -> None:
    # Eager torch.cond compiles its branches with Dynamo: start from a fresh cache, not
    # from what earlier tests in this worker compiled (recompiles there made a CI run
    # trace the predicate as a data-dependent float).
    torch._dynamo.reset()
    original = _load(_source(name), f"fixture_{name}_original", name)
    fixed = _load(_fixed(name), f"fixture_{name}_fixed", name)
    outcomes = set()
    for seed in SEEDS:
        model_a, model_b = original.make_model(), fixed.make_model()
        inputs_a, inputs_b = original.make_inputs(seed), fixed.make_inputs(seed)
        a = _Observed(functools.partial(model_a, *inputs_a))
        b = _Observed(functools.partial(model_b, *inputs_b))
        assert a.error == b.error, f"seed {seed}"
        assert _same(a.result, b.result), f"seed {seed}"
        assert (a.stdout, a.logged, a.warned) == (b.stdout, b.logged, b.warned), f"seed {seed}"
        outcomes.add(a.error[0].__name__ if a.error else "ok")
    if name == "validation":
        # Every way out is exercised: success and both exception types.
        assert outcomes == {"ok", "ValueError", "AssertionError"}


def _dynamo_breaks(module: types.ModuleType) -> int:
    torch._dynamo.reset()
    explained = torch._dynamo.explain(module.make_model())(*module.make_inputs(0))
    return explained.graph_break_count


@pytest.mark.parametrize("name", NAMES)
def test_fix_removes_dynamo_breaks(name: str) -> None:
    if name == "deferred_effects" and torch.__version__ < "2.13":
        pytest.skip(
            "Dynamo before 2.13 cannot take id() of a logger: a logger method's deferred call still breaks there"
        )
    original = _load(_source(name), f"fixture_{name}_original", name)
    fixed = _load(_fixed(name), f"fixture_{name}_fixed", name)
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert (_dynamo_breaks(original), _dynamo_breaks(fixed)) == original.DYNAMO_BREAKS


def _runtime_breaks(module: types.ModuleType) -> dict[str, int]:
    report = fullgraph.runtime.explain(module.make_model(), *module.make_inputs(0)).to_json()
    counts: dict[str, int] = {}
    # A read of the data that runs in front of the graph still makes one record per
    # value: the fix must remove it as it removes a break.
    for found in report["breaks"] + report["data_checks"]:
        counts[found["code"]] = counts.get(found["code"], 0) + 1
    return counts


@needs_runtime
@pytest.mark.skipif(
    not hasattr(fullgraph.runtime, "explain"), reason="fullgraph.runtime.explain is not built yet"
)
@pytest.mark.parametrize("name", NAMES)
def test_fix_removes_runtime_breaks(name: str) -> None:
    original = _load(_source(name), f"fixture_{name}_original", name)
    fixed = _load(_fixed(name), f"fixture_{name}_fixed", name)
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        before, after = _runtime_breaks(original), _runtime_breaks(fixed)
    for code, (expected_before, expected_after) in original.RUNTIME_BREAKS.items():
        assert (before.get(code, 0), after.get(code, 0)) == (expected_before, expected_after), code
