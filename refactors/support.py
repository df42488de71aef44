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

Under TorchDynamo the recorded call instead becomes a node of the graph: a
custom operator, ``fullgraph::emit``, registered as an *ordered effect* (so no
compiler drops it or moves it past another effect), that runs the call with the
snapshotted tensors when the graph runs, at its place in the program.  That
holds wherever the call is traced: in the function Dynamo starts with, or in a
function it inlines (a decorated ``forward`` of a submodule called from a
compiled model), where an eager emission would be a call to a disabled
function, that is, a graph break; and with every backend, Inductor included
(torch 2.13's ``leaf_function``, used before, made Inductor fail on the node).
The operator takes the call's tensors and a number naming the rest of the call
(the function, and the arguments with their constants in place): that number
comes from :func:`_layout_id`, which Dynamo runs once while tracing and folds
into a constant.  Dynamo's own alternative,
``torch._dynamo.config.reorderable_logging_functions``, cannot serve: it takes
only tensors and constants as arguments (not the function to call), drops
keyword arguments, and in torch 2.13 silently drops calls made in inlined
frames.  Arguments the graph cannot carry (objects other than tensors, numbers,
strings, sizes and lists/tuples/dicts of them, or sizes and numbers Dynamo
made symbolic) make the call run where it stands, as in the original program.

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

# The functions the FG102 rewrite defers; a graph's emission node names one by its
# position here (Dynamo before 2.13 cannot trace ``id`` of a builtin such as print).
_KNOWN_CALLABLES: tuple[Callable[..., Any], ...] = (
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


class _Size(NamedTuple):
    """A ``torch.Size`` on its way through the graph (pytree would make it a tuple)."""

    dims: tuple[int, ...]


def _function_key(function: Callable[..., Any]) -> int | None:
    # ``is`` keeps Dynamo away from comparing objects it cannot fold (bound methods).
    for position, known in enumerate(_KNOWN_CALLABLES):
        if function is known:
            return position
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


class _Slot(NamedTuple):
    """Where the call's tensor number ``index`` goes back into its arguments."""

    index: int


def _split(value: Any, tensors: list[torch.Tensor]) -> Any:
    """``value`` with each tensor, snapshotted, moved to ``tensors`` and a :class:`_Slot`
    in its place; sizes become :class:`_Size` (pytree would make them tuples)."""
    if isinstance(value, torch.Tensor):
        tensors.append(value.detach().clone())
        return _Slot(len(tensors) - 1)
    if isinstance(value, torch.Size):
        return _Size(tuple(value))
    if type(value) is list:
        return [_split(item, tensors) for item in value]
    if type(value) is tuple:
        return tuple([_split(item, tensors) for item in value])
    if type(value) is dict:
        return {key: _split(item, tensors) for key, item in value.items()}
    return value


def _joined(value: Any, tensors: list[torch.Tensor]) -> Any:
    if isinstance(value, _Slot):
        return tensors[value.index]
    if isinstance(value, _Size):
        return torch.Size(value.dims)
    if type(value) is list:
        return [_joined(item, tensors) for item in value]
    if type(value) is tuple:
        return tuple([_joined(item, tensors) for item in value])
    if type(value) is dict:
        return {key: _joined(item, tensors) for key, item in value.items()}
    return value


def _constant(value: Any) -> bool:
    """Whether a traced value is a plain constant (Dynamo may make sizes and numbers
    symbolic: their type is then not ``int``)."""
    if isinstance(value, torch.Tensor):
        return True
    if value is None or type(value) in (bool, int, float, str):
        return True
    if isinstance(value, torch.Size):
        return all(type(dim) is int for dim in value)
    if type(value) in (list, tuple):
        return all(_constant(item) for item in value)
    if type(value) is dict:
        return all(_constant(item) for item in value.values())
    return False


# The calls graphs make, by the number their emission node carries.
_LAYOUTS: dict[int, tuple[int, str | None, Any]] = {}


@torch._dynamo.assume_constant_result
def _layout_id(key: int, method: str | None, skeleton: Any) -> int:
    """A number for (function, method, arguments without their tensors); Dynamo calls it
    once while tracing and keeps the number as a constant of the graph."""
    layout = (key, method, skeleton)
    for number, known in _LAYOUTS.items():
        if known == layout:
            return number
    number = len(_LAYOUTS) + 1
    _LAYOUTS[number] = layout
    return number


def _in_graph(key: int | None, method: str | None, args: tuple, kwargs: dict) -> bool:
    """Emit through a graph node; False where the graph cannot carry the call.

    Then the caller records it as in eager code (Dynamo replays the list append where
    compilation started inside the region) or calls it at once (a graph break, as in
    the original program).
    """
    if _emit_op is None or key is None or not _graph_can_carry((args, kwargs)):
        return False
    if not _constant((args, kwargs)):
        return False
    tensors: list[torch.Tensor] = []
    skeleton = _split((args, kwargs), tensors)
    _emit_op(_layout_id(key, method, skeleton), tensors)
    return True


_objects_by_id: dict[int, Any] = {}


def _target(key: int, method: str | None) -> Callable[..., Any]:
    if method is None:
        return _KNOWN_CALLABLES[key]
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


def _emit_layout(layout: int, tensors: list[torch.Tensor]) -> None:
    key, method, skeleton = _LAYOUTS[layout]
    args, kwargs = _joined(skeleton, tensors)
    with _unobserved():
        _target(key, method)(*args, **kwargs)


def _register_emit_op() -> Callable[..., Any] | None:
    """``fullgraph::emit(layout, tensors)``: an operator no compiler may drop or reorder."""
    try:
        from torch._higher_order_ops.effects import _EffectType, _register_effectful_op
    except ImportError:  # pragma: no cover - a torch without ordered effects: a break
        return None
    operator = torch.library.custom_op("fullgraph::emit", mutates_args=())(_emit_layout)

    @operator.register_fake
    def _emit_fake(layout: int, tensors: list[torch.Tensor]) -> None:
        return None

    _register_effectful_op(torch.ops.fullgraph.emit.default, _EffectType.ORDERED)
    return torch.ops.fullgraph.emit


_emit_op = _register_emit_op()


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
