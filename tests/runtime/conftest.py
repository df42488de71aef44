"""Shared helpers for the runtime acceptance tests.

The acceptance tests compare a compiled callable against plain eager PyTorch
on fresh random data, call after call.  The helpers below carry that
comparison so each test can stay a few lines long; they are fixtures because
a conftest is not importable as a module.

- ``assert_same(actual, expected)``: nested outputs are equal — the same
  container types, keys, dataclasses and Python scalars, and tensors equal by
  ``torch.testing.assert_close`` (which also checks dtype, device and shape).
- ``replay(compiled, eager, make_args)``: calls both several times and checks,
  after every call, the outputs and the counters that prove the first call
  was the monitoring run and every later one replayed its record.
- ``check_call(compiled, eager, args, counts=...)``: one call of each, then the
  exact (monitor_runs, hits, records) — for the guard and error tests.
- ``assert_same_state(module, eager_module)``: parameters and buffers equal.
- ``count_ops(graph_module)``, ``inductor_tolerance``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

# Inductor's first compile of a graph takes seconds; a shared cache keeps the
# inductor-marked tests fast on reruns (the Makefile exports the same path).
os.environ.setdefault(
    "TORCHINDUCTOR_CACHE_DIR", str(Path(__file__).resolve().parents[2] / ".cache" / "inductor")
)

# Inductor reorders reductions, so its results differ from eager in the last
# bits; the eager backend runs the same kernels and must match exactly.
INDUCTOR_TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}


@pytest.fixture
def inductor_tolerance() -> dict:
    """Keyword arguments for ``assert_close`` when the backend is Inductor."""
    return dict(INDUCTOR_TOLERANCE)


@pytest.fixture(autouse=True)
def _seeded_rng():
    """Every test sees the same random data, so a failure reproduces."""
    torch.manual_seed(0)


def _assert_same(actual: Any, expected: Any, where: str, tolerance: dict) -> None:
    # Check the type first: a mock that returns a list for a tuple, a dict
    # for a dataclass or a 0-d tensor for an int is a visible difference.
    assert type(actual) is type(expected), (
        f"{where}: got {type(actual).__name__}, eager gives {type(expected).__name__}"
    )
    if isinstance(expected, torch.Tensor):
        torch.testing.assert_close(actual, expected, msg=lambda m: f"{where}: {m}", **tolerance)
    elif isinstance(expected, (tuple, list)):
        assert len(actual) == len(expected), f"{where}: length {len(actual)} != {len(expected)}"
        for index, (a, e) in enumerate(zip(actual, expected)):
            _assert_same(a, e, f"{where}[{index}]", tolerance)
    elif isinstance(expected, dict):
        # Key order is part of what a user sees (printing, iteration).
        assert list(actual) == list(expected), f"{where}: keys {list(actual)} != {list(expected)}"
        for key in expected:
            _assert_same(actual[key], expected[key], f"{where}[{key!r}]", tolerance)
    elif dataclasses.is_dataclass(expected):
        for field in dataclasses.fields(expected):
            _assert_same(
                getattr(actual, field.name),
                getattr(expected, field.name),
                f"{where}.{field.name}",
                tolerance,
            )
    else:
        assert actual == expected, f"{where}: {actual!r} != {expected!r}"


def assert_same_nested(actual: Any, expected: Any, *, where: str = "result", **tolerance) -> None:
    """Assert two (possibly nested) results are equal as a user would compare them."""
    _assert_same(actual, expected, where, tolerance)


@pytest.fixture
def assert_same() -> Callable[..., None]:
    """``assert_same(actual, expected, where="result", rtol=..., atol=...)``."""
    return assert_same_nested


def clone_tensors(value: Any) -> Any:
    """A copy of ``value`` whose tensors are fresh (so in-place updates don't leak
    from one side of a comparison to the other); other objects are shared."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone().requires_grad_(value.requires_grad)
    if isinstance(value, tuple):
        return tuple(clone_tensors(v) for v in value)
    if isinstance(value, list):
        return [clone_tensors(v) for v in value]
    if isinstance(value, dict):
        return {k: clone_tensors(v) for k, v in value.items()}
    return value


# The tests' own functions and modules live next to this file; a replayed
# record must run none of them (it runs guard -> graph -> mock instead).
TESTS_DIR = str(Path(__file__).resolve().parent)


@contextlib.contextmanager
def watch_user_code() -> Iterator[list[str]]:
    """Collects ``"name (file:line)"`` for every test-file function that starts
    running inside the block.  ``sys.setprofile`` is independent of the
    monitor's ``sys.settrace``, so watching does not disturb it."""
    started: list[str] = []

    def profile(frame, event, arg):
        code = frame.f_code
        if (
            event == "call"
            and code.co_filename.startswith(TESTS_DIR)
            and code.co_filename != __file__
        ):
            started.append(f"{code.co_name} ({Path(code.co_filename).name}:{code.co_firstlineno})")

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield started
    finally:
        sys.setprofile(previous)


def call_watched(compiled: Any, args: tuple, kwargs: dict) -> Any:
    """``compiled(*args, **kwargs)``; if the call was a hit, no user code may have run."""
    hits_before = compiled.stats.hits
    with watch_user_code() as started:
        result = compiled(*args, **kwargs)
    if compiled.stats.hits > hits_before:
        assert not started, f"a replayed call ran the user's Python code: {started}"
    return result


def assert_replayed(compiled: Any, calls: int) -> None:
    """After ``calls`` same-shaped calls: one monitoring run, every later call a hit."""
    stats = compiled.stats
    assert stats.monitor_runs == 1, f"after {calls} calls: {stats}"
    assert stats.hits == calls - 1, f"after {calls} calls: {stats}"
    assert stats.fallbacks == 0, f"after {calls} calls: {stats}"
    assert len(compiled.records) == 1, f"after {calls} calls: {len(compiled.records)} records"


def replay_against_eager(
    compiled: Any,
    eager: Callable[..., Any],
    make_args: Callable[[], tuple],
    *,
    make_kwargs: Callable[[], dict] | None = None,
    calls: int = 3,
    after_call: Callable[[], None] | None = None,
    graphs_per_record: int | None = 1,
    **tolerance,
) -> list[Any]:
    """Call ``eager`` and ``compiled`` on the same fresh inputs ``calls`` times.

    After every call: outputs equal, ``after_call()`` (a test's own state
    comparison) passes, and the counters say monitor once, then hit; a hit
    runs none of the user's Python code.  Code
    without graph breaks must give one graph per record: that is the point of
    fullgraph, and a record that ran the code eagerly would show zero.
    Returns the compiled outputs.
    """
    outputs = []
    for call in range(1, calls + 1):
        args = make_args()
        kwargs = make_kwargs() if make_kwargs else {}
        expected = eager(*clone_tensors(args), **clone_tensors(kwargs))
        actual = call_watched(compiled, args, kwargs)
        assert_same_nested(actual, expected, where=f"call {call} result", **tolerance)
        if after_call is not None:
            after_call()
        assert_replayed(compiled, call)
        outputs.append(actual)
    if graphs_per_record is not None:
        for record in compiled.records:
            assert len(record.graphs) == graphs_per_record, (
                f"expected {graphs_per_record} graph(s) per record, got {len(record.graphs)}:\n"
                f"{record.graph_code}"
            )
    return outputs


@pytest.fixture
def replay() -> Callable[..., list[Any]]:
    """``replay(compiled, eager, make_args, calls=3, after_call=None, ...)``; see
    :func:`replay_against_eager`."""
    return replay_against_eager


def state_snapshot(module: torch.nn.Module) -> dict[str, Any]:
    """Parameters and buffers (BatchNorm running stats, counters), by name."""
    return dict(module.state_dict(keep_vars=False))


@pytest.fixture
def assert_same_state(assert_same) -> Callable[[torch.nn.Module, torch.nn.Module], None]:
    """``assert_same_state(compiled_module, eager_module)``: every parameter and
    buffer holds the same values."""

    def check(compiled_module: torch.nn.Module, eager_module: torch.nn.Module) -> None:
        assert_same(state_snapshot(compiled_module), state_snapshot(eager_module), where="state")

    return check


def op_count(graph_module: torch.fx.GraphModule) -> int:
    """Number of operations (not placeholders/outputs) in a captured graph."""
    return sum(
        node.op in ("call_function", "call_method", "call_module")
        for node in graph_module.graph.nodes
    )


@pytest.fixture
def count_ops() -> Callable[[torch.fx.GraphModule], int]:
    return op_count


@pytest.fixture
def check_call(assert_same) -> Callable[..., Any]:
    """``check_call(compiled, eager, args, counts=(monitor_runs, hits, records))``:
    one call of each on the same inputs; outputs equal and the counters exactly
    ``counts`` afterwards.  Returns the compiled output."""

    def check(compiled: Any, eager: Callable[..., Any], args: tuple, *, counts, **tolerance) -> Any:
        expected = eager(*clone_tensors(args))
        actual = call_watched(compiled, args, {})
        assert_same(actual, expected, **tolerance)
        stats = compiled.stats
        observed = (stats.monitor_runs, stats.hits, len(compiled.records))
        assert observed == tuple(counts), (
            f"(monitor_runs, hits, records) = {observed}, expected {tuple(counts)}; {stats}"
        )
        return actual

    return check
