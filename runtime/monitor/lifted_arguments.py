"""Numbers that vary, passed as value arguments of torch calls, lifted into the graph.

``x * s`` lifts a varying ``s`` into the graph (``taint._combine``); the same
number passed to a torch call — ``x.clamp(max=s)``, ``x.mul(s)``,
``torch.full(shape, s)``, ``F.leaky_relu(x, s)`` — was
guarded by value instead, a record per value.  For the calls below, whose
number arguments are values an op computes with (never sizes, dims or flags),
such a number is handed to the capture as a pending lift: the graph takes it
as an input and the op gets the Python number back (``scalar.item()``), so the
op is the one the program ran.  Not listed: ops whose Inductor decomposition
branches on the number (``lerp``: ``weight >= 0.5``; ``F.hardtanh`` checks its
bounds in Python), which a graph input can't decide.  An object passed twice to
one call (a cached small int, ``clamp(min=s, max=s)``) is not lifted: the
capture lifts by identity.  A number the capture did not take (the call was replayed, or the op
read it elsewhere) is guarded by value after the call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from fullgraph.runtime.torch_internals import tree_flatten

# Ops whose float arguments are values (their other numbers are ints, if any).
_FLOAT_VALUES = frozenset(
    [
        "clamp", "clip", "clamp_min", "clamp_max", "masked_fill", "fill", "full",
        "full_like", "new_full", "leaky_relu", "elu", "celu", "softplus", "addcmul",
        "addcdiv", "where", "add", "sub", "subtract",
        "mul", "multiply", "div", "divide", "true_divide", "rsub", "remainder", "fmod",
        "floor_divide",
    ]
)  # fmt: skip
# Of those, the ops whose every int argument is a value too (``x.mul(n)``, a fill).
_INT_VALUES = frozenset(
    [
        "add", "sub", "subtract", "mul", "multiply", "rsub", "div", "divide", "true_divide",
        "remainder", "fmod", "floor_divide", "masked_fill", "fill", "full", "full_like",
        "new_full", "clamp", "clip", "clamp_min", "clamp_max", "where",
    ]
)  # fmt: skip


def register(run: Any, state: Any, fn: Any, args: tuple, kwargs: dict) -> Callable | None:
    """Hand the call's symbolic value arguments to the capture (an after-phase that
    guards those it did not take), or None."""
    syms = state.call_syms
    if not syms:
        return None
    name = _torch_op_name(fn)
    if name is None or name not in _FLOAT_VALUES:
        return None
    values = [*args, *kwargs.values()]
    base = len(syms) - len(values)
    if base < 0:
        return None
    seen: dict[int, int] = {}
    for leaf in tree_flatten((args, kwargs))[0]:
        seen[id(leaf)] = seen.get(id(leaf), 0) + 1
    lifted = {}
    for position, value in enumerate(values):
        sym = syms[base + position]
        kind = type(value)
        if sym is None or not (kind is float or (kind is int and name in _INT_VALUES)):
            continue
        if seen[id(value)] > 1 or id(value) in run.pending_lifts:
            continue
        lifted[id(value)] = sym
        syms[base + position] = None  # taken here: not guarded as a leftover of the call
    if not lifted:
        return None
    run.pending_lifts.update(lifted)

    return lambda: run.guard_untaken_lifts(lifted)


def chained(after: Callable | None, lifted: Callable | None) -> Callable | None:
    """The call's after-phase, then ``lifted``'s; a call that raised runs ``lifted``
    too (the call's own exception handlers kept)."""
    if lifted is None:
        return after
    if after is None:
        lifted.on_exception = lambda error: lifted()
        return lifted

    def both() -> None:
        after()
        lifted()

    for name in ("on_raise", "on_exception"):
        handler = getattr(after, name, None)
        if handler is not None:
            setattr(both, name, _then(handler, lifted))
    if not hasattr(both, "on_exception"):
        both.on_exception = lambda error: lifted()
    return both


def _then(handler: Callable, lifted: Callable) -> Callable:
    def run_both(error: BaseException) -> Any:
        try:
            return handler(error)
        finally:
            lifted()

    return run_both


def _torch_op_name(fn: Any) -> str | None:
    """The op's name for a torch function or tensor method (in-place ones without their
    underscore), else None."""
    objclass = getattr(fn, "__objclass__", None)
    receiver = getattr(fn, "__self__", None)
    module = getattr(fn, "__module__", None) or ""
    if not (
        (isinstance(objclass, type) and issubclass(objclass, torch._C.TensorBase))
        or isinstance(receiver, torch.Tensor)
        or module.split(".")[0] == "torch"
    ):
        return None
    name = getattr(fn, "__name__", None)
    if not isinstance(name, str) or name.startswith("__"):
        return None
    return name.removesuffix("_")
