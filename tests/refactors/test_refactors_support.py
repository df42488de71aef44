"""The runtime helpers that rewritten code imports (fullgraph.refactors.support)."""

from __future__ import annotations

import pytest
import torch

from fullgraph.refactors.support import check, defer_side_effects, deferred


def test_deferred_outside_a_region_runs_at_once() -> None:
    events: list[str] = []
    deferred(events.append, "now")
    assert events == ["now"]


def test_effects_run_after_the_region_in_order() -> None:
    events: list[object] = []

    @defer_side_effects
    def step(x: torch.Tensor) -> torch.Tensor:
        events.append("body starts")
        deferred(events.append, "first effect")
        deferred(events.append, "second effect")
        events.append("body ends")
        return x + 1

    assert torch.equal(step(torch.zeros(2)), torch.ones(2))
    assert events == ["body starts", "body ends", "first effect", "second effect"]


def test_tensor_arguments_are_snapshots() -> None:
    seen: list[torch.Tensor] = []

    @defer_side_effects
    def step(x: torch.Tensor) -> None:
        deferred(seen.append, x)
        deferred(lambda pair: seen.append(pair[0]), (x, "label"))
        x.add_(10)  # an in-place update after the call was recorded

    x = torch.zeros(2)
    step(x)
    assert torch.equal(x, torch.full((2,), 10.0))
    assert all(torch.equal(t, torch.zeros(2)) for t in seen)


def test_effects_are_emitted_when_the_region_raises() -> None:
    events: list[str] = []

    @defer_side_effects
    def step() -> None:
        deferred(events.append, "effect")
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        step()
    assert events == ["effect"]


def test_nested_regions_emit_at_their_own_end() -> None:
    events: list[str] = []

    @defer_side_effects
    def inner() -> None:
        deferred(events.append, "inner effect")
        events.append("inner body")

    @defer_side_effects
    def outer() -> None:
        deferred(events.append, "outer effect")
        inner()
        events.append("outer body")

    outer()
    assert events == ["inner body", "inner effect", "outer body", "outer effect"]


def test_decorated_method_still_binds_self() -> None:
    class Scale(torch.nn.Module):
        @defer_side_effects
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * 3

    assert torch.equal(Scale()(torch.ones(1)), torch.full((1,), 3.0))
    assert Scale.forward.__name__ == "forward"


def test_check_keeps_the_exception_type_and_message() -> None:
    check(torch.tensor(True), ValueError, "fine")
    with pytest.raises(ValueError, match="^x must be positive$"):
        check(torch.tensor(False), ValueError, "x must be positive")
    with pytest.raises(AssertionError) as caught:
        check(torch.tensor(False), AssertionError)
    assert caught.value.args == ()


def test_check_stays_in_the_graph_under_dynamo() -> None:
    def positive_log(x: torch.Tensor) -> torch.Tensor:
        check((x > 0).all(), ValueError, "x must be positive")
        return x.log()

    torch._dynamo.reset()
    compiled = torch.compile(positive_log, backend="eager", fullgraph=True)
    assert torch.allclose(compiled(torch.ones(3)), torch.zeros(3))
    with pytest.raises(RuntimeError, match="ValueError: x must be positive"):
        compiled(-torch.ones(3))
