"""Following symbolic scalars through a frame's value stack and locals.

Runs before every instruction of an observed frame, ahead of the opcode
handlers.  ``FrameState.shadow`` mirrors the value stack (one entry per slot:
a :class:`~fullgraph.runtime.symbolic.scalars.Sym` or ``None``) and
``FrameState.local_syms`` the fast locals.  Instructions that combine
numbers extend the expression; branches on a symbolic value record a
condition; anything else that consumes one *concretizes* it (its exact
value is guarded), which is always correct, merely less reusable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from fullgraph.runtime import cpython
from fullgraph.runtime.symbolic import sizes
from fullgraph.runtime.symbolic.scalars import COMPARE, Leaf, Op, Sym

if TYPE_CHECKING:
    from fullgraph.runtime.monitor.run import MonitorRun
    from fullgraph.runtime.monitor.state import FrameState

After = Callable[[], None] | None


def _pops(ins) -> int | None:
    """Stack slots ``ins`` consumes, for those not modelled below (None: unknown,
    every symbolic slot is treated as consumed); the table is the version's."""
    return cpython.pops(ins)


def _sync(state: FrameState) -> list:
    depth = cpython.stack_depth(state.frame)
    shadow = state.shadow
    if len(shadow) > depth:
        del shadow[depth:]
    elif len(shadow) < depth:
        shadow.extend([None] * (depth - len(shadow)))
    return shadow


def _set_top(state: FrameState, sym: Sym | None) -> None:
    _set_at(state, 0, sym)


def _set_at(state: FrameState, depth: int, sym: Sym | None) -> None:
    shadow = _sync(state)
    if len(shadow) > depth:
        shadow[-1 - depth] = sym


def _landed_callout(run: MonitorRun, state: FrameState, callouts_before: int) -> None:
    """If the instruction's result is a callout's scalar result, make it symbolic."""
    shadow = _sync(state)
    if not shadow or len(run.tape.callouts) == callouts_before:
        return
    callout = run.tape.callouts[-1]
    top = cpython.stack_item(state.frame, 0)
    if top is callout.result and run.symbolic_candidate(top):
        callout.guard_result = False  # checked where it is used instead
        shadow[-1] = Leaf(top, callout=callout.index)


def step(run: MonitorRun, state: FrameState, ins) -> After:
    """Account for ``ins`` in the shadow stack; may return an after-phase."""
    shadow = _sync(state)
    name = ins.opname
    if name in sizes.NATIVE_READS and run.shapes is not None and run.shapes.live:
        sizes.check_instruction(
            run.shapes, name, lambda depth: cpython.stack_item(state.frame, depth)
        )
    handler = _HANDLERS.get(name)
    if handler is not None:
        return handler(run, state, ins, shadow)
    if any(shadow):
        _consume(run, shadow, _pops(ins))
    if name in cpython.SYMBOLIC_LOADS:
        return lambda: _symbolic_load(run, state, ins)
    return None


def _consume(run: MonitorRun, shadow: list, pops: int | None) -> int:
    """Operands taken where no symbol follows them: guarded by value. Returns their count."""
    count = len(shadow) if pops is None else min(pops, len(shadow))
    for i in range(len(shadow) - count, len(shadow)):
        if shadow[i] is not None:
            run.concretize(shadow[i])
            shadow[i] = None
    return count


def _symbolic_load(run: MonitorRun, state: FrameState, ins) -> None:
    def item(depth):
        return cpython.stack_item(state.frame, depth)

    depth = cpython.loaded_depth(ins, item) if ins.opname != "BINARY_SUBSCR" else 0
    if depth is None:
        return
    leaf = run.take_symbolic_read(item(depth))
    if leaf is not None:
        _set_at(state, depth, leaf)


_HANDLERS: dict[str, Callable] = {}


def _handles(*names: str, since: tuple | None = None, until: tuple | None = None):
    def register(fn):
        for name in names:
            if cpython.registers(name, since, until):
                _HANDLERS[name] = fn
        return fn

    return register


@_handles("LOAD_FAST")
@_handles("LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR", since=(3, 12))
def _load_fast(run, state, ins, shadow) -> After:
    sym = state.local_syms.get(ins.arg)
    if ins.opname == "LOAD_FAST_AND_CLEAR":
        state.local_syms.pop(ins.arg, None)  # an inlined comprehension saves the local
    return (lambda: _set_top(state, sym)) if sym is not None else None


@_handles("LOAD_FAST_LOAD_FAST", since=(3, 13))
def _load_fast_load_fast(run, state, ins, shadow) -> After:
    first = state.local_syms.get(ins.arg >> 4)
    second = state.local_syms.get(ins.arg & 15)
    if first is None and second is None:
        return None

    def after() -> None:
        _set_at(state, 1, first)
        _set_at(state, 0, second)

    return after


@_handles("STORE_FAST")
def _store_fast(run, state, ins, shadow) -> After:
    _store_local(state, ins.arg, shadow[-1] if shadow else None)
    return None


def _store_local(state, index: int, sym) -> None:
    if sym is None:
        state.local_syms.pop(index, None)
    else:
        state.local_syms[index] = sym


@_handles("STORE_FAST_STORE_FAST", since=(3, 13))
def _store_fast_store_fast(run, state, ins, shadow) -> After:
    # STACK[-1] into local arg >> 4, then STACK[-2] into local arg & 15
    _store_local(state, ins.arg >> 4, shadow[-1] if shadow else None)
    _store_local(state, ins.arg & 15, shadow[-2] if len(shadow) >= 2 else None)
    return None


@_handles("STORE_FAST_LOAD_FAST", since=(3, 13))
def _store_fast_load_fast(run, state, ins, shadow) -> After:
    _store_local(state, ins.arg >> 4, shadow[-1] if shadow else None)
    sym = state.local_syms.get(ins.arg & 15)
    return lambda: _set_top(state, sym)


@_handles("MAKE_FUNCTION")
@_handles("SET_FUNCTION_ATTRIBUTE", since=(3, 13))
def _make_function(run, state, ins, shadow) -> After:
    """``def g(v, k=scale)``: a default keeps its value, unfollowed: guarded by value."""
    count = _consume(run, shadow, _pops(ins))
    for depth in range(count):  # and the items of a defaults tuple built from symbols
        for sym in run.container_syms.get(id(cpython.stack_item(state.frame, depth)), {}).values():
            if sym is not None:
                run.concretize(sym)
    return None


@_handles("MAKE_CELL")
def _make_cell(run, state, ins, shadow) -> After:
    """An argument a nested function reads from its cell, unfollowed: guarded by value."""
    sym = state.local_syms.pop(ins.arg, None)
    if sym is not None:
        run.concretize(sym)
    return None


@_handles("STORE_DEREF")
def _store_deref(run, state, ins, shadow) -> After:
    # A symbolic value stored into a cell: the same, for a value computed in the frame.
    if shadow and shadow[-1] is not None:
        run.concretize(shadow[-1])
    return None


@_handles("DELETE_FAST")
def _delete_fast(run, state, ins, shadow) -> After:
    state.local_syms.pop(ins.arg, None)
    return None


@_handles("POP_TOP")
def _pop_top(run, state, ins, shadow) -> After:
    """A value dropped unused (the module ``model.train()`` returns, a discarded call
    result): nothing the program does depends on it, so nothing about it is guarded."""
    if shadow:
        shadow[-1] = None
    return None


@_handles("COPY")
def _copy(run, state, ins, shadow) -> After:
    sym = shadow[-ins.arg] if len(shadow) >= ins.arg else None
    return (lambda: _set_top(state, sym)) if sym is not None else None


@_handles("SWAP")
def _swap(run, state, ins, shadow) -> After:
    n = ins.arg
    if len(shadow) >= n:
        shadow[-1], shadow[-n] = shadow[-n], shadow[-1]
    return None


def _operands(state, shadow, count: int) -> tuple[list, list]:
    syms = list(shadow[len(shadow) - count :])
    values = [cpython.stack_item(state.frame, count - 1 - i) for i in range(count)]
    return syms, values


def _numeric(value: Any) -> bool:
    return type(value) in (int, float, bool)


def _combine(run, state, syms, values, template: str) -> After:
    """An operation on symbolic operands: a new expression, or a lift into the graph."""
    if all(_numeric(v) for v in values):
        operands = tuple(s if s is not None else v for s, v in zip(syms, values))

        def after() -> None:
            result = cpython.stack_item(state.frame, 0)
            _set_top(state, Op(result, template, operands) if _numeric(result) else None)
            if not _numeric(result):
                for sym in syms:
                    if sym is not None:
                        run.concretize(sym)

        return after
    if any(isinstance(v, torch.Tensor) for v in values):
        # A binary operator has one scalar operand, so even a shared small int is
        # unambiguous here; bools stay guarded by value.
        lifts = {
            id(v): s for s, v in zip(syms, values) if s is not None and type(v) in (int, float)
        }
        for sym, value in zip(syms, values):
            if sym is not None and id(value) not in lifts:
                run.concretize(sym)
        run.pending_lifts.update(lifts)

        def after() -> None:
            for key in list(lifts):
                sym = run.pending_lifts.pop(key, None)
                if sym is not None:  # the graph never took it
                    run.concretize(sym)
            # The slot the result lands in held the left operand's symbol (``s * x``,
            # ``s - x.sum()``): the tensor the op made must not take it (the mock would
            # return the number).  A number a tensor op made is not followed either: its
            # operands are guarded.
            if _numeric(cpython.stack_item(state.frame, 0)):
                for sym in syms:
                    if sym is not None:
                        run.concretize(sym)
            _set_top(state, None)

        return after
    for sym in syms:
        if sym is not None:
            run.concretize(sym)

    def after() -> None:  # the result is a plain value now (its operands are guarded)
        _set_top(state, None)

    return after


@_handles("BINARY_OP")
def _binary_op(run, state, ins, shadow) -> After:
    if not any(shadow[-2:]):
        return None
    syms, values = _operands(state, shadow, 2)
    symbol = cpython.BINARY_OPS.get(ins.arg, (None,))[0]
    if symbol is None:
        for sym in syms:
            if sym is not None:
                run.concretize(sym)
        return None
    return _combine(run, state, syms, values, f"({{0}} {symbol} {{1}})")


@_handles("COMPARE_OP")
def _compare_op(run, state, ins, shadow) -> After:
    if not any(shadow[-2:]):
        return None
    syms, values = _operands(state, shadow, 2)
    if ins.argval not in COMPARE:
        for sym in syms:
            if sym is not None:
                run.concretize(sym)
        return lambda: _set_top(state, None)
    return _combine(run, state, syms, values, f"({{0}} {ins.argval} {{1}})")


_UNARY = {
    "UNARY_NEGATIVE": "(-{0})",
    "UNARY_NOT": "(not {0})",
    "UNARY_POSITIVE": "(+{0})",
    "UNARY_INVERT": "(~{0})",
    "TO_BOOL": "bool({0})",
}


@_handles("UNARY_NEGATIVE", "UNARY_NOT", "UNARY_INVERT")
@_handles("UNARY_POSITIVE", until=(3, 11))
@_handles("TO_BOOL", since=(3, 13))
def _unary(run, state, ins, shadow) -> After:
    if not shadow or shadow[-1] is None:
        return None
    syms, values = _operands(state, shadow, 1)
    return _combine(run, state, syms, values, _UNARY[ins.opname])


@_handles("CALL_INTRINSIC_1", since=(3, 12))
def _intrinsic_1(run, state, ins, shadow) -> After:
    if not shadow or shadow[-1] is None:
        return None
    if ins.arg == cpython.INTRINSIC_UNARY_POSITIVE:
        syms, values = _operands(state, shadow, 1)
        return _combine(run, state, syms, values, "(+{0})")
    run.concretize(shadow[-1])
    shadow[-1] = None
    return None


@_handles(*cpython.BRANCH_OPS)
def _branch(run, state, ins, shadow) -> After:
    if shadow and shadow[-1] is not None:
        run.branch_on(shadow[-1], bool(cpython.stack_item(state.frame, 0)))
        if ins.opname.startswith("POP_JUMP"):
            shadow[-1] = None
    return None


_CONVERSIONS = {0: "{0}", 1: "str({0})", 2: "repr({0})", 3: "ascii({0})"}


@_handles("FORMAT_VALUE", until=(3, 12))
def _format_value(run, state, ins, shadow) -> After:
    has_spec = bool(ins.arg & 4)
    conversion = _CONVERSIONS[ins.arg & 3]
    template = f"format({conversion}, {{1}})" if has_spec else f"format({conversion})"
    return _format(run, state, shadow, 1 + has_spec, template)


@_handles("CONVERT_VALUE", "FORMAT_SIMPLE", "FORMAT_WITH_SPEC", since=(3, 13))
def _format_pieces(run, state, ins, shadow) -> After:
    # 3.13 splits FORMAT_VALUE: CONVERT_VALUE (!s !r !a), then FORMAT_SIMPLE or
    # FORMAT_WITH_SPEC [value, spec].
    if ins.opname == "CONVERT_VALUE":
        return _format(run, state, shadow, 1, _CONVERSIONS[ins.arg])
    if ins.opname == "FORMAT_SIMPLE":
        return _format(run, state, shadow, 1, "format({0})")
    return _format(run, state, shadow, 2, "format({0}, {1})")


def _format(run, state, shadow, count: int, template: str) -> After:
    """An f-string piece formatting the value under ``count - 1`` other operands."""
    before = len(run.tape.callouts)
    tracker = run.shapes
    if tracker is not None and tracker.live and shadow[len(shadow) - count] is None:
        # f"{x.shape}": the message is rebuilt from each call's sizes, not pinned to these.
        value = cpython.stack_item(state.frame, count - 1)
        shadow[len(shadow) - count] = sizes.size_sym(value)
        tracker.formatting = shadow[len(shadow) - count] is not None
    if not any(shadow[len(shadow) - count :]):
        return lambda: _landed_callout(run, state, before)
    syms, values = _operands(state, shadow, count)
    operands = tuple(s if s is not None else v for s, v in zip(syms, values))

    def after() -> None:
        if tracker is not None:
            tracker.formatting = False
        _set_top(state, Op(cpython.stack_item(state.frame, 0), template, operands))

    return after


@_handles("BUILD_STRING")
def _build_string(run, state, ins, shadow) -> After:
    count = ins.arg
    if not any(shadow[len(shadow) - count :]):
        return None
    syms, values = _operands(state, shadow, count)
    operands = tuple(s if s is not None else v for s, v in zip(syms, values))
    template = "''.join((" + "".join(f"{{{i}}}, " for i in range(count)) + "))"

    def after() -> None:
        _set_top(state, Op(cpython.stack_item(state.frame, 0), template, operands))

    return after


def _container_built(run, state, items: dict) -> After:
    """After a container literal: remember which of its items are symbolic."""

    def after() -> None:
        container = cpython.stack_item(state.frame, 0)
        run.container_syms[id(container)] = items
        run.keepalive.append(container)
        _set_top(state, None)

    return after


@_handles("BUILD_TUPLE", "BUILD_LIST")
def _build_sequence(run, state, ins, shadow) -> After:
    count = ins.arg
    syms = shadow[len(shadow) - count :] if count else []
    if not any(syms):
        return None
    items = {i: s for i, s in enumerate(syms) if s is not None}

    return _container_built(run, state, items)


@_handles("BUILD_CONST_KEY_MAP")
def _build_const_key_map(run, state, ins, shadow) -> After:
    count = ins.arg
    syms = shadow[len(shadow) - count - 1 : -1] if count else []
    if not any(syms):
        return None
    keys = cpython.stack_item(state.frame, 0)
    items = {key: s for key, s in zip(keys, syms) if s is not None}

    return _container_built(run, state, items)


@_handles("BUILD_MAP")
def _build_map(run, state, ins, shadow) -> After:
    count = ins.arg
    slots = shadow[len(shadow) - 2 * count :] if count else []
    if not any(slots):
        return None
    items = {}
    for i in range(count):
        key_sym, value_sym = slots[2 * i], slots[2 * i + 1]
        if key_sym is not None:
            run.concretize(key_sym)
        if value_sym is not None:
            items[cpython.stack_item(state.frame, 2 * (count - i) - 1)] = value_sym

    return _container_built(run, state, items)


@_handles("CALL", "CALL_FUNCTION_EX")
@_handles("CALL_KW", since=(3, 13))
def _call(run, state, ins, shadow) -> After:
    operands = shadow[len(shadow) - _pops(ins) :]
    if ins.opname == "CALL_KW":  # 3.13: the keyword names' tuple is on top, not an argument
        operands = operands[:-1]
    state.call_syms = list(operands) if any(operands) else None
    before = len(run.tape.callouts)

    def after() -> None:
        leftover, state.call_syms = state.call_syms, None
        result_sym = state.call_result_sym
        state.call_result_sym = None
        if leftover:
            for sym in leftover:
                if sym is not None:
                    run.concretize(sym)
        if result_sym is not None:
            _set_top(state, result_sym)
        else:
            _landed_callout(run, state, before)

    return after


@_handles("RETURN_VALUE")
def _return_value(run, state, ins, shadow) -> After:
    sym = shadow[-1] if shadow else None
    if sym is not None:
        if run.frames and run.frames[0] is state and len(run.frames) == 1:
            run.result_sym = (cpython.stack_item(state.frame, 0), sym)
        else:
            run.concretize(sym)
    return None


@_handles("STORE_ATTR")
def _store_attr(run, state, ins, shadow) -> After:
    if len(shadow) >= 2 and shadow[-2] is not None:
        owner = cpython.stack_item(state.frame, 0)
        run.store_symbolic(
            (id(owner), ins.argval), owner, cpython.stack_item(state.frame, 1), shadow[-2]
        )
    return None


@_handles("STORE_SUBSCR")
def _store_subscr(run, state, ins, shadow) -> After:
    if len(shadow) >= 3 and shadow[-3] is not None:
        container, key = cpython.stack_item(state.frame, 1), cpython.stack_item(state.frame, 0)
        if isinstance(container, torch.Tensor):
            run.concretize(shadow[-3])
        else:
            run.store_symbolic(
                (id(container), key), container, cpython.stack_item(state.frame, 2), shadow[-3]
            )
    return None


@_handles("STORE_GLOBAL")
def _store_global(run, state, ins, shadow) -> After:
    if shadow and shadow[-1] is not None:
        globals_dict = state.frame.f_globals
        run.store_symbolic(
            (id(globals_dict), ins.argval),
            globals_dict,
            cpython.stack_item(state.frame, 0),
            shadow[-1],
        )
    return None
