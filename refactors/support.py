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

Recording is a list append on a module-level list, which fullgraph's runtime
captures without a break; the decorator's own frame is skipped by Dynamo
(``torch._dynamo.eval_frame.skip_code``), so the function it wraps is compiled
as a whole and the effects run after the graph.

Under TorchDynamo the recorded call instead becomes an opaque node of the graph
(``torch._dynamo.decorators.leaf_function``, torch 2.13 and later) that runs the
call with the snapshotted arguments when the graph runs, at its place in the
program.  That holds wherever the call is traced: in the function Dynamo starts
with, or in a function it inlines (a decorated ``forward`` of a submodule called
from a compiled model), where an eager emission would be a call to a disabled
function, that is, a graph break.  Dynamo's own alternative,
``torch._dynamo.config.reorderable_logging_functions``, cannot serve: it takes
only tensors and constants as arguments (not the function to call), drops
keyword arguments, and in torch 2.13 silently drops calls made in inlined
frames.  The function to call travels into the graph as a number (its ``id``,
which Dynamo folds into a constant) and is looked up again when the graph runs;
arguments the graph cannot carry (objects other than tensors, numbers, strings,
sizes and lists/tuples/dicts of them) make the call run where it stands, as in
the original program.

Predicated validation (rule FG103) rewrites ``if not c: raise E("msg")`` into
``check(c, E, "msg")``: an in-graph ``torch._assert_async`` that raises the
original exception type and message in eager code.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import sys
import warnings
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple, TypeVar

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
    if torch.compiler.is_compiling() and _in_graph(_function_key(function), None, args, kwargs):
        return
    if not _regions:
        function(*args, **kwargs)
        return
    _regions[-1].append((function, _snapshot(args), _snapshot(kwargs)))


def deferred_method(method: Callable[..., Any], name: str, /, *args: Any, **kwargs: Any) -> None:
    """``deferred(method, ...)`` for a bound method (``logger.info``) called ``name``.

    A bound method is a new object on every attribute read, which Dynamo cannot
    turn into a constant; its receiver and the method's name can be.  The method
    itself is passed too: fullgraph's runtime takes a call that receives an object
    from outside (the logger) for one that may read it, which is a break there.
    """
    if torch.compiler.is_compiling() and _in_graph(id(method.__self__), name, args, kwargs):
        return
    deferred(method, *args, **kwargs)


# -- emission inside a Dynamo graph -----------------------------------------------

# The functions the FG102 rewrite defers, by id: what a graph's emission node calls.
_KNOWN_FUNCTIONS: dict[int, Callable[..., Any]] = {
    id(function): function
    for function in (
        print,
        warnings.warn,
        logging.log,
        logging.debug,
        logging.info,
        logging.warning,
        logging.warn,  # type: ignore[attr-defined]
        logging.error,
        logging.critical,
        logging.exception,
    )
}
_KNOWN_CALLABLES = tuple(_KNOWN_FUNCTIONS.values())


class _Size(NamedTuple):
    """A ``torch.Size`` on its way through the graph (pytree would make it a tuple)."""

    dims: tuple[int, ...]


def _function_key(function: Callable[..., Any]) -> int | None:
    # ``id`` of a known function is folded by Dynamo into a constant; ``is`` keeps
    # Dynamo away from ``id`` of objects it cannot fold (bound methods).
    for known in _KNOWN_CALLABLES:
        if function is known:
            return id(known)
    return None


def _graph_can_carry(value: Any) -> bool:
    if value is None or isinstance(value, (torch.Tensor, bool, int, float, str)):
        return True
    # Exact types: a named tuple or list subclass would come back as a plain one.
    if type(value) in (list, tuple) or isinstance(value, torch.Size):
        return all(_graph_can_carry(item) for item in value)
    if type(value) is dict:
        return all(isinstance(key, str) and _graph_can_carry(item) for key, item in value.items())
    return False


def _graph_snapshot(value: Any) -> Any:
    """:func:`_snapshot` for the graph: sizes become :class:`_Size`, tuples stay tuples."""
    if isinstance(value, torch.Size):
        return _Size(tuple(value))
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if type(value) is list:
        return [_graph_snapshot(item) for item in value]
    if type(value) is tuple:
        return tuple([_graph_snapshot(item) for item in value])
    if type(value) is dict:
        return {key: _graph_snapshot(item) for key, item in value.items()}
    return value


def _restored(value: Any) -> Any:
    if isinstance(value, _Size):
        return torch.Size(value.dims)
    if type(value) is list:
        return [_restored(item) for item in value]
    if type(value) is tuple:
        return tuple([_restored(item) for item in value])
    if type(value) is dict:
        return {key: _restored(item) for key, item in value.items()}
    return value


def _in_graph(key: int | None, method: str | None, args: tuple, kwargs: dict) -> bool:
    """Emit through a graph node; False where the graph cannot carry the call.

    Then the caller records it as in eager code (Dynamo replays the list append where
    compilation started inside the region) or calls it at once (a graph break, as in
    the original program).
    """
    if _emit_in_graph is None or key is None or not _graph_can_carry((args, kwargs)):
        return False
    _emit_in_graph(key, method, _graph_snapshot(args), _graph_snapshot(kwargs))
    return True


_objects_by_id: dict[int, Any] = {}


def _target(key: int, method: str | None) -> Callable[..., Any]:
    if method is None:
        return _KNOWN_FUNCTIONS[key]
    receiver = _objects_by_id.get(key)
    if receiver is None:
        # Loggers live in logging's manager for the life of the process, so an id seen
        # while tracing still names the same logger when the graph runs.
        loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
        for candidate in loggers:
            if id(candidate) == key:
                receiver = _objects_by_id[key] = candidate
                break
        else:
            raise RuntimeError("fullgraph: the object of a deferred method call is gone")
    return getattr(receiver, method)


def _emit_now(key: int, method: str | None, args: tuple, kwargs: dict) -> None:
    with _unobserved():
        _target(key, method)(*_restored(args), **_restored(kwargs))


try:
    from torch._dynamo.decorators import leaf_function as _leaf_function
except ImportError:  # pragma: no cover - torch < 2.13: the deferred call breaks the graph
    _emit_in_graph = None
else:
    _emit_in_graph = _leaf_function(_emit_now)

    @_emit_in_graph.register_fake
    def _emit_in_graph_fake(key: int, method: str | None, args: tuple, kwargs: dict) -> None:
        return None


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
        if torch.compiler.is_compiling():
            # Inlined into a frame Dynamo compiles (this frame is skipped only where
            # compilation starts): each deferred call is a node of the graph.
            return function(*args, **kwargs)
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


def check(condition: Any, exception: type[BaseException], message: str | None = None) -> None:
    """Predicated validation: raise ``exception(message)`` unless ``condition`` holds.

    For a one-element tensor the check is ``torch._assert_async``, an operator that
    a graph can hold, so no Python code reads the tensor's value (which would break
    the graph).  In eager code on the CPU the operator fails at once and the failure
    is turned back into the original exception type and message.  Inside a compiled
    graph (Dynamo, or a record replayed by fullgraph's runtime) the failure is a
    ``RuntimeError`` whose message is ``"<ExceptionType>: <message>"``; on an
    accelerator it may surface at the next synchronisation.

    Any other condition is tested by Python's truth test, exactly as the original
    ``assert`` or ``if not c: raise`` did: a Python bool or number, ``None``, a
    container, and a tensor of several elements or none (whose truth test raises
    the same ``RuntimeError`` as in the original statement).
    """
    if not isinstance(condition, torch.Tensor) or condition.numel() != 1:
        if not condition:
            # ``raise E`` and ``assert c`` carry no arguments; keep it that way.
            raise exception() if message is None else exception(message)
        return
    text = exception.__name__ if message is None else f"{exception.__name__}: {message}"
    if torch.compiler.is_compiling():
        torch._assert_async(condition, text)
        return
    try:
        torch._assert_async(condition, text)
    except RuntimeError:
        raise (exception() if message is None else exception(message)) from None
