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

Predicated validation (rule FG103) rewrites ``if not c: raise E("msg")`` into
``check(c, E, "msg")``: an in-graph ``torch._assert_async`` that raises the
original exception type and message in eager code.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable, Iterator
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
    # Exact types only: subclasses (torch.Size, namedtuples) are immutable or rebuilt
    # differently, and their printed form must not change.
    if type(value) is list:
        return [_snapshot(item) for item in value]
    if type(value) is tuple:
        return tuple([_snapshot(item) for item in value])
    if type(value) is dict:
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
@contextlib.contextmanager
def _unobserved() -> Iterator[None]:
    """Hide the emission from fullgraph's runtime, which observes the call it compiles.

    Emitting formats the recorded tensors (``float(t)``, ``repr(t)``) and runs
    logging handlers: work that happens after the compiled call and belongs to no
    graph.  The runtime's monitor (a ``sys.settrace`` tracer) and its capture mode
    (a torch-function mode) would count it as breaks inside the call.  Other
    tracers (debuggers, coverage) are left alone.
    """
    tracer = sys.gettrace()
    owner = getattr(getattr(tracer, "__self__", tracer), "__module__", "") or ""
    monitored = owner.startswith("fullgraph.runtime")
    if monitored:
        sys.settrace(None)
    try:
        with torch._C.DisableTorchFunction():
            yield
    finally:
        if monitored:
            sys.settrace(tracer)


@torch._dynamo.disable
def _emit(effects: list[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]]) -> None:
    with _unobserved():
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
    # Dynamo must skip this frame (its ``finally`` emits the effects, which would break
    # the graph) yet still compile the function it calls.  Marking the code object, unlike
    # wrapping in ``torch._dynamo.disable``, adds no wrapper frame of Dynamo's own that
    # other tracers (fullgraph's runtime) would have to step through.
    _skip_frame_under_dynamo(run_then_emit.__code__)
    return run_then_emit  # type: ignore[return-value]


def _skip_frame_under_dynamo(code) -> None:
    try:
        from torch._dynamo.eval_frame import skip_code
    except ImportError:  # pragma: no cover - older torch: Dynamo then traces the wrapper too
        return
    skip_code(code)


def check(
    condition: torch.Tensor, exception: type[BaseException], message: str | None = None
) -> None:
    """Predicated validation: raise ``exception(message)`` unless ``condition`` holds.

    The check is ``torch._assert_async``, an operator that a graph can hold, so
    no Python code reads the tensor's value (which would break the graph).  In
    eager code on the CPU the operator fails at once and the failure is turned
    back into the original exception type and message.  Inside a compiled graph
    (Dynamo, or a record replayed by fullgraph's runtime) the failure is a
    ``RuntimeError`` whose message is ``"<ExceptionType>: <message>"``; on an
    accelerator it may surface at the next synchronisation.
    """
    text = exception.__name__ if message is None else f"{exception.__name__}: {message}"
    if torch.compiler.is_compiling():
        torch._assert_async(condition, text)
        return
    try:
        torch._assert_async(condition, text)
    except RuntimeError:
        # ``raise E`` and ``assert c`` carry no arguments; keep it that way.
        raise (exception() if message is None else exception(message)) from None
