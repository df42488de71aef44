"""The shadow value stack the symbolic-scalar handlers share, and their registry.

``FrameState.shadow`` mirrors the interpreter's value stack, one entry per slot
(a :class:`~fullgraph.runtime.symbolic.scalars.Sym` or ``None``).  These are the
primitives every handler of ``monitor/taint.py`` and ``monitor/taint_builds.py``
uses to keep it in step, and the table of handlers by opcode name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from fullgraph.runtime import cpython
from fullgraph.runtime.symbolic.scalars import Leaf, Sym

if TYPE_CHECKING:
    from fullgraph.runtime.monitor.run import MonitorRun
    from fullgraph.runtime.monitor.state import FrameState

After = Callable[[], None] | None


def sync(state: FrameState) -> list:
    depth = cpython.stack_depth(state.frame)
    shadow = state.shadow
    if len(shadow) > depth:
        del shadow[depth:]
    elif len(shadow) < depth:
        shadow.extend([None] * (depth - len(shadow)))
    return shadow


def set_top(state: FrameState, sym: Sym | None) -> None:
    set_at(state, 0, sym)


def set_at(state: FrameState, depth: int, sym: Sym | None) -> None:
    shadow = sync(state)
    if len(shadow) > depth:
        shadow[-1 - depth] = sym


def landed_callout(run: MonitorRun, state: FrameState, callouts_before: int) -> None:
    """If the instruction's result is a callout's scalar result, make it symbolic."""
    shadow = sync(state)
    if not shadow or len(run.tape.callouts) == callouts_before:
        return
    callout = run.tape.callouts[-1]
    top = cpython.stack_item(state.frame, 0)
    if top is callout.result and run.symbolic_candidate(top):
        callout.guard_result = False  # checked where it is used instead
        shadow[-1] = Leaf(top, callout=callout.index)


def stack_operands(state, shadow, count: int) -> tuple[list, list]:
    syms = list(shadow[len(shadow) - count :])
    values = [cpython.stack_item(state.frame, count - 1 - i) for i in range(count)]
    return syms, values


# opcode name -> handler(run, state, ins, shadow), run before the instruction
HANDLERS: dict[str, Callable] = {}


def handles(*names: str, since: tuple | None = None, until: tuple | None = None):
    """Register a handler for opcodes ``names`` on Python versions [since, until]."""

    def register(fn):
        for name in names:
            if cpython.registers(name, since, until):
                HANDLERS[name] = fn
        return fn

    return register
