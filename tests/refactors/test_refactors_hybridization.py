"""Hybridization (FG106) end to end: the decorator the fix adds compiles and keeps results."""

from __future__ import annotations

import functools
import sys
import types

import pytest
from refactors_helpers import needs_runtime

from fullgraph.refactors import fix_source, lint_source

SOURCE = (
    "import torch\n"
    "\n"
    "\n"
    "def gelu_mlp(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:\n"
    "    return torch.nn.functional.gelu(x @ w).sum(dim=-1)\n"
    "\n"
    "\n"
    "def report(x: torch.Tensor) -> torch.Tensor:\n"
    "    print(x.shape)\n"
    "    return x\n"
)


def _load(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    sys.modules[name] = module
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)  # noqa: S102 - test source
    return module


def test_only_the_eligible_function_is_decorated() -> None:
    fixed = fix_source(SOURCE, codes={"FG106"})
    assert fixed.count("@fullgraph.runtime.compile\n") == 1
    assert "@fullgraph.runtime.compile\ndef gelu_mlp" in fixed
    (refused,) = [f for f in lint_source(fixed) if f.code == "FG106"]
    assert refused.refusal_reason.startswith("HAS_PYTHON_SIDE_EFFECTS")


@needs_runtime
def test_decorated_function_compiles_and_gives_the_same_results(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import torch

    import fullgraph.runtime

    # The fix writes a bare `@fullgraph.runtime.compile`; tests compile with the eager
    # backend (Inductor is the runtime's own concern and slow on CPU).
    monkeypatch.setattr(
        fullgraph.runtime, "compile", functools.partial(fullgraph.runtime.compile, backend="eager")
    )
    original = _load(SOURCE, "hybridization_original")
    fixed = _load(fix_source(SOURCE, codes={"FG106"}), "hybridization_fixed")
    generator = torch.Generator().manual_seed(0)
    w = torch.randn(4, 3, generator=generator)
    for _ in range(3):
        x = torch.randn(2, 4, generator=generator)
        assert torch.allclose(original.gelu_mlp(x, w), fixed.gelu_mlp(x, w))
    stats = fixed.gelu_mlp.stats
    # One monitoring run, then the record replays for inputs of the same shape.
    assert (stats.monitor_runs, stats.hits) == (1, 2)
