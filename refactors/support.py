"""Runtime helpers that code rewritten by the refactors imports.

Deferred side effects (rule FG102).  Inside a compiled function a ``print``,
a ``logging`` call or ``warnings.warn`` is a graph break.  The rewrite turns

    print("mean", x.mean())                    into   deferred(print, "mean", x.mean())

and decorates the function that opens the compiled region with
:func:`defer_side_effects`.  While that function runs, :func:`deferred` only
records the call, with tensor arguments cloned (so a later in-place update
does not change what gets printed); when the function returns *or raises*,
the recorded calls run in order.  Outside such a region ``deferred`` calls
at once, so the rewritten code behaves like the original in eager code too.

Recording is a list append on a module-level list, which TorchDynamo and
fullgraph's runtime both capture without a break; the decorator's own frame is
skipped by Dynamo (``torch._dynamo.disable(recursive=False)``), so the
function it wraps is compiled as a whole and the effects run after the graph.

Predicated validation (rule FG103) needs no helper: it rewrites to
:func:`torch._assert_async` through :func:`check`, which keeps the original
exception type and message for eager runs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import torch

F = TypeVar("F", bound=Callable[..., Any])

# One list of recorded calls per active region (regions nest when a decorated
# function calls another).  A plain list, not a thread-local: Dynamo traces
# list mutation on a global but not thread-local attribute access.
_regions: list[list[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]]] = []


def _snapshot(value: Any) -> Any:
    """A copy of ``value`` that later in-place tensor updates cannot change."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_snapshot(item) for item in value)
    if isinstance(value, dict):
        return {key: _snapshot(item) for key, item in value.items()}
    return value


def deferred(function: Callable[..., Any], /, *args: Any, **kwargs: Any) -> None:
    """Call ``function(*args, **kwargs)`` after the current region, or now outside one."""
    if not _regions:
        function(*args, **kwargs)
        return
    _regions[-1].append((function, _snapshot(args), _snapshot(kwargs)))


# The emitting frame must stay eager as a whole: under Dynamo a nested frame of a
# non-recursively disabled function is compiled again, and print/logging break it.
@torch._dynamo.disable
def _emit(effects: list[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]]) -> None:
    for function, args, kwargs in effects:
        function(*args, **kwargs)


def defer_side_effects(function: F) -> F:
    """Open a region: calls recorded by :func:`deferred` inside run when ``function`` ends."""

    @functools.wraps(function)
    def run_then_emit(*args: Any, **kwargs: Any) -> Any:
        _regions.append([])
        try:
            return function(*args, **kwargs)
        finally:
            _emit(_regions.pop())

    run_then_emit.__fullgraph_defers_side_effects__ = True  # type: ignore[attr-defined]
    # Skip only this frame under Dynamo: the wrapped function is still compiled.
    return torch._dynamo.disable(run_then_emit, recursive=False)  # type: ignore[return-value]


def check(condition: torch.Tensor, exception: type[BaseException], message: str | None = None) -> None:
    """Predicated validation: raise ``exception(message)`` unless ``condition`` holds.

    In eager code the check reads the value and raises the original exception
    type with the original message.  Under compilation (Dynamo or fullgraph's
    runtime) reading the value would break the graph, so the check becomes an
    in-graph ``torch._assert_async``; its failure carries the same message.
    """
    if torch.compiler.is_compiling():
        text = exception.__name__ if message is None else f"{exception.__name__}: {message}"
        torch._assert_async(condition, text)
        return
    if not bool(condition):
        # ``raise E`` and ``assert c`` carry no arguments; keep it that way.
        raise exception() if message is None else exception(message)
