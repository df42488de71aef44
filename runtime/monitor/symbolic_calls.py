"""Pure builtins and library functions of numbers that vary: followed as expressions.

``int(n / 2)``, ``round(scale * h)``, ``numpy.std(values)``, ``math.sqrt(d)``
called on symbolic numbers (arguments that varied between calls, callout
results such as ``.item()``) keep their result an expression of those numbers:
the mock computes it again on every call instead of the record pinning the
value.  A result the monitor cannot follow makes the operands guarded by value.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

from fullgraph.runtime.monitor.callouts import argument_syms
from fullgraph.runtime.record.codegen import is_literal
from fullgraph.runtime.symbolic.scalars import Op, Sym, is_symbolic_number

if TYPE_CHECKING:
    from fullgraph.runtime.monitor.state import FrameState

_NUMERIC_BUILTINS = (abs, float, int, round, min, max, bool, str)
# Libraries whose pure functions the mock may call again by name (``numpy.std(c0)``).
REPLAYABLE_LIBRARIES = ("numpy", "math")


def follow(run: Any, state: FrameState, fn: Any, args: tuple, result) -> Callable | None:
    """The after-phase that follows ``fn(*args)`` of symbolic operands, or None."""
    if isinstance(fn, Hashable) and fn in _NUMERIC_BUILTINS:  # a Transform is not
        return _builtin(run, state, fn, args, result)
    path = _library_path(fn)
    if path is not None:
        return _library_call(run, state, path, args, result)
    return None


def _builtin(run: Any, state: FrameState, fn, args: tuple, result) -> Callable:
    syms = argument_syms(state.call_syms, len(args))
    state.call_syms = None
    operands = tuple(syms.get(i, value) for i, value in enumerate(args))
    template = f"{fn.__name__}(" + ", ".join(f"{{{i}}}" for i in range(len(args))) + ")"

    def after() -> None:
        value = result()
        if is_symbolic_number(value) or isinstance(value, (bool, str)):
            _decide_the_winner(run, fn, args, operands)
            state.call_result_sym = Op(value, template, operands)
        else:
            for sym in syms.values():
                run.concretize(sym)

    return after


def _decide_the_winner(run: Any, fn: Any, args: tuple, operands: tuple) -> None:
    """``min(1, step / 3)``: an int or a float, by which one wins, and a graph takes the
    number in the dtype of that type: which one wins is a condition of the record."""
    if fn not in (min, max) or len({type(a) for a in args}) < 2:
        return
    if len(args) != 2:  # more than two: each operand's number decides
        for operand in operands:
            if isinstance(operand, Sym):
                run.concretize(operand)
        return
    second_wins = args[1] < args[0] if fn is min else args[1] > args[0]
    template = "({1} < {0})" if fn is min else "({1} > {0})"
    run.branch_on(Op(second_wins, template, operands), second_wins)


def _library_call(run: Any, state: FrameState, path: str, args: tuple, result) -> Callable:
    """A pure numpy/math function of symbolic values: the mock calls it again
    (``numpy.std(c0)``), so a number computed from tensor data follows each call."""
    syms = argument_syms(state.call_syms, len(args))
    state.call_syms = None
    constants_ok = all(i in syms or is_literal(value) for i, value in enumerate(args))
    operands = tuple(syms.get(i, value) for i, value in enumerate(args))
    template = f"{path}(" + ", ".join(f"{{{i}}}" for i in range(len(args))) + ")"

    def after() -> None:
        value = result()
        if constants_ok and (_follows(value) or (path in _MATH_TESTS and type(value) is bool)):
            state.call_result_sym = Op(value, template, operands)
        else:
            for sym in syms.values():
                run.concretize(sym)

    return after


# ``if not math.isfinite(loss_value):`` (a training loop's guard against a diverged
# loss): a test of a number that varies, whose answer is the branch's condition.
_MATH_TESTS = frozenset(["math.isfinite", "math.isnan", "math.isinf", "math.isclose"])


def _library_path(fn: Any) -> str | None:
    """``numpy.std`` for ``np.std``: a pure library function the mock can name."""
    module = getattr(fn, "__module__", None) or ""
    root = module.split(".")[0]
    name = getattr(fn, "__name__", None)
    if root not in REPLAYABLE_LIBRARIES or not name or root not in sys.modules:
        return None
    return f"{root}.{name}" if getattr(sys.modules[root], name, None) is fn else None


def _follows(value: Any) -> bool:
    """A result the monitor can follow as an expression: a number or a numpy array."""
    if isinstance(value, bool):
        return False
    if is_symbolic_number(value):
        return True
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(value, (numpy.generic, numpy.ndarray))
