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

from typing import TYPE_CHECKING, Any

import torch

from fullgraph.runtime import cpython
from fullgraph.runtime.monitor import (
    closure_sources,
    container_items,
    lifted_index,
    packed_syms,
    passed_syms,
    taint_builds,  # also registers its handlers
    user_code,
)
from fullgraph.runtime.monitor.taint_stack import (
    HANDLERS,
    After,
    handles,
    landed_callout,
    set_at,
    set_top,
    stack_operands,
    sync,
)
from fullgraph.runtime.symbolic import size_pinning
from fullgraph.runtime.symbolic.scalars import COMPARE, Op

if TYPE_CHECKING:
    from fullgraph.runtime.monitor.run import MonitorRun
    from fullgraph.runtime.monitor.state import FrameState


def _pops(ins) -> int | None:
    """Stack slots ``ins`` consumes, for those not modelled below (None: unknown,
    every symbolic slot is treated as consumed); the table is the version's."""
    return cpython.pops(ins)


def step(run: MonitorRun, state: FrameState, ins) -> After:
    """Account for ``ins`` in the shadow stack; may return an after-phase."""
    shadow = sync(state)
    if state.returned is not None:  # a callee's symbolic result no call instruction took
        run.concretize(state.returned[1])
        state.returned = None
    name = ins.opname
    if name in size_pinning.NATIVE_READS and run.shapes is not None and run.shapes.live:
        size_pinning.check_instruction(
            run.shapes, name, lambda depth: cpython.stack_item(state.frame, depth)
        )
    if run.container_syms and name not in _MOVES_CONTAINERS:
        taken = container_items.step(run, state, ins, shadow)
        if taken is not False:  # ``vals[0]``, ``for v in vals``: the item's symbol
            return taken
        container_items.read_containers(run, state, ins)
    handler = HANDLERS.get(name)
    if run.container_syms and name in taint_builds.NESTS:
        after = handler(run, state, ins, shadow) if handler is not None else None
        return taint_builds.nesting(run, state, ins, after)
    if handler is not None:
        return handler(run, state, ins, shadow)
    if name == "BINARY_SUBSCR" and any(shadow):
        lifted = lifted_index.register(run, state, shadow)
        if lifted is not None:
            return lifted
    if any(shadow):
        _consume(run, shadow, _pops(ins))
    if name in cpython.SYMBOLIC_LOADS:
        return lambda: _symbolic_load(run, state, ins)
    return None


# Instructions that move a container without reading its items: it keeps the symbols
# of the items it was built with (the mock rebuilds it from them when it is returned
# or stored).  STORE_SUBSCR and STORE_ATTR store the container as a value, or into it.
_MOVES_CONTAINERS = frozenset(
    [
        "STORE_FAST",
        "STORE_FAST_STORE_FAST",
        "STORE_FAST_LOAD_FAST",
        "STORE_DEREF",
        "STORE_GLOBAL",
        "STORE_ATTR",
        "STORE_SUBSCR",
        "COPY",
        "SWAP",
        "POP_TOP",
        "RETURN_VALUE",
        "BUILD_TUPLE",
        "BUILD_LIST",
        "BUILD_MAP",
        "BUILD_CONST_KEY_MAP",
        "UNPACK_SEQUENCE",  # taint_builds._unpack_sequence: the items keep their symbols
        "CALL_FUNCTION_EX",  # packed_syms.unpacked_operands: the items go to the callee
        "DICT_MERGE",  # packed_syms._merge: ``f(**kw)``'s items keep their symbols
        "DICT_UPDATE",
    ]
)


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
        set_at(state, depth, leaf)


@handles("LOAD_FAST")
@handles("LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR", since=(3, 12))
def _load_fast(run, state, ins, shadow) -> After:
    sym = state.local_syms.get(ins.arg)
    if ins.opname == "LOAD_FAST_AND_CLEAR":
        state.local_syms.pop(ins.arg, None)  # an inlined comprehension saves the local
    return (lambda: set_top(state, sym)) if sym is not None else None


@handles("LOAD_FAST_LOAD_FAST", since=(3, 13))
def _load_fast_load_fast(run, state, ins, shadow) -> After:
    first = state.local_syms.get(ins.arg >> 4)
    second = state.local_syms.get(ins.arg & 15)
    if first is None and second is None:
        return None

    def after() -> None:
        set_at(state, 1, first)
        set_at(state, 0, second)

    return after


@handles("STORE_FAST")
def _store_fast(run, state, ins, shadow) -> After:
    _store_local(state, ins.arg, shadow[-1] if shadow else None)
    return None


def _store_local(state, index: int, sym) -> None:
    if sym is None:
        state.local_syms.pop(index, None)
    else:
        state.local_syms[index] = sym


@handles("STORE_FAST_STORE_FAST", since=(3, 13))
def _store_fast_store_fast(run, state, ins, shadow) -> After:
    # STACK[-1] into local arg >> 4, then STACK[-2] into local arg & 15
    _store_local(state, ins.arg >> 4, shadow[-1] if shadow else None)
    _store_local(state, ins.arg & 15, shadow[-2] if len(shadow) >= 2 else None)
    return None


@handles("STORE_FAST_LOAD_FAST", since=(3, 13))
def _store_fast_load_fast(run, state, ins, shadow) -> After:
    _store_local(state, ins.arg >> 4, shadow[-1] if shadow else None)
    sym = state.local_syms.get(ins.arg & 15)
    return lambda: set_top(state, sym)


@handles("MAKE_FUNCTION")
@handles("SET_FUNCTION_ATTRIBUTE", since=(3, 13))
def _make_function(run, state, ins, shadow) -> After:
    """``def g(v, k=scale)``: a default keeps its value, unfollowed: guarded by value."""
    count = _consume(run, shadow, _pops(ins))
    for depth in range(count):  # and the items of a defaults tuple built from symbols
        taint_builds.concretize_items(run, cpython.stack_item(state.frame, depth))
    return None


@handles("MAKE_CELL")
def _make_cell(run, state, ins, shadow) -> After:
    """An argument a nested function reads from its cell, unfollowed: guarded by value."""
    sym = state.local_syms.pop(ins.arg, None)
    if sym is not None:
        run.concretize(sym)
    return None


@handles("STORE_DEREF")
def _store_deref(run, state, ins, shadow) -> After:
    """``nonlocal count; count += 1``: a symbolic value stored into a closure cell the
    guard can reach is written by the mock as its expression, as a global is; into
    any other cell (a local one a nested function reads), guarded by value."""
    if not shadow or shadow[-1] is None:
        return None
    index = cpython.free_var_index(state.frame.f_code, ins.arg)
    function = cpython.frame_function(state.frame)
    if (
        index is not None
        and function is not None
        and run.speculating is None
        and closure_sources.cell_source(run, function, index) is not None
    ):
        value = cpython.stack_item(state.frame, 0)
        run.store_syms[(id(function.__closure__[index]), None)] = (value, shadow[-1])
        run.keepalive.append(value)
        return None
    run.concretize(shadow[-1])
    return None


@handles("DELETE_FAST")
def _delete_fast(run, state, ins, shadow) -> After:
    state.local_syms.pop(ins.arg, None)
    return None


@handles("POP_TOP")
def _pop_top(run, state, ins, shadow) -> After:
    """A value dropped unused (the module ``model.train()`` returns, a discarded call
    result): nothing the program does depends on it, so nothing about it is guarded."""
    if shadow:
        shadow[-1] = None
    return None


@handles("COPY")
def _copy(run, state, ins, shadow) -> After:
    sym = shadow[-ins.arg] if len(shadow) >= ins.arg else None
    return (lambda: set_top(state, sym)) if sym is not None else None


@handles("SWAP")
def _swap(run, state, ins, shadow) -> After:
    n = ins.arg
    if len(shadow) >= n:
        shadow[-1], shadow[-n] = shadow[-n], shadow[-1]
    return None


def _numeric(value: Any) -> bool:
    return type(value) in (int, float, bool)


def _combine(run, state, syms, values, template: str) -> After:
    """An operation on symbolic operands: a new expression, or a lift into the graph."""
    if all(_numeric(v) for v in values):
        operands = tuple(s if s is not None else v for s, v in zip(syms, values))

        def after() -> None:
            result = cpython.stack_item(state.frame, 0)
            set_top(state, Op(result, template, operands) if _numeric(result) else None)
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
            run.guard_untaken_lifts(lifts)
            # The slot the result lands in held the left operand's symbol (``s * x``,
            # ``s - x.sum()``): the tensor the op made must not take it (the mock would
            # return the number).  A number a tensor op made is not followed either: its
            # operands are guarded.
            if _numeric(cpython.stack_item(state.frame, 0)):
                for sym in syms:
                    if sym is not None:
                        run.concretize(sym)
            set_top(state, None)

        return after
    for sym in syms:
        if sym is not None:
            run.concretize(sym)

    def after() -> None:  # the result is a plain value now (its operands are guarded)
        set_top(state, None)

    return after


@handles("BINARY_OP")
def _binary_op(run, state, ins, shadow) -> After:
    if not any(shadow[-2:]):
        return None
    syms, values = stack_operands(state, shadow, 2)
    symbol = cpython.BINARY_OPS.get(ins.arg, (None,))[0]
    if symbol is None:
        for sym in syms:
            if sym is not None:
                run.concretize(sym)
        return None
    if symbol == "%" and type(values[0]) is str and syms[0] is None and _numeric(values[1]):
        return taint_builds.percent_format(run, state, values[0], ((syms[1],), False))
    if symbol == "**" and syms[1] is not None and all(type(v) is int for v in values):
        # ``base ** e`` of ints is an int for e >= 0, a float below: the sign is decided.
        run.branch_on(Op(values[1] >= 0, "({0} >= 0)", (syms[1],)), values[1] >= 0)
    return _combine(run, state, syms, values, f"({{0}} {symbol} {{1}})")


@handles("COMPARE_OP")
def _compare_op(run, state, ins, shadow) -> After:
    if not any(shadow[-2:]):
        return None
    syms, values = stack_operands(state, shadow, 2)
    if ins.argval not in COMPARE:
        for sym in syms:
            if sym is not None:
                run.concretize(sym)
        return lambda: set_top(state, None)
    return _combine(run, state, syms, values, f"({{0}} {ins.argval} {{1}})")


_UNARY = {
    "UNARY_NEGATIVE": "(-{0})",
    "UNARY_NOT": "(not {0})",
    "UNARY_POSITIVE": "(+{0})",
    "UNARY_INVERT": "(~{0})",
    "TO_BOOL": "bool({0})",
}


@handles("UNARY_NEGATIVE", "UNARY_NOT", "UNARY_INVERT")
@handles("UNARY_POSITIVE", until=(3, 11))
@handles("TO_BOOL", since=(3, 13))
def _unary(run, state, ins, shadow) -> After:
    if not shadow or shadow[-1] is None:
        return None
    syms, values = stack_operands(state, shadow, 1)
    return _combine(run, state, syms, values, _UNARY[ins.opname])


@handles("CALL_INTRINSIC_1", since=(3, 12))
def _intrinsic_1(run, state, ins, shadow) -> After:
    if not shadow or shadow[-1] is None:
        return None
    if ins.arg == cpython.INTRINSIC_UNARY_POSITIVE:
        syms, values = stack_operands(state, shadow, 1)
        return _combine(run, state, syms, values, "(+{0})")
    run.concretize(shadow[-1])
    shadow[-1] = None
    return None


@handles(*cpython.BRANCH_OPS)
def _branch(run, state, ins, shadow) -> After:
    if shadow and shadow[-1] is not None:
        run.branch_on(shadow[-1], bool(cpython.stack_item(state.frame, 0)))
        if ins.opname.startswith("POP_JUMP"):
            shadow[-1] = None
    return None


@handles(
    "POP_JUMP_FORWARD_IF_NONE",
    "POP_JUMP_FORWARD_IF_NOT_NONE",
    "POP_JUMP_BACKWARD_IF_NONE",
    "POP_JUMP_BACKWARD_IF_NOT_NONE",
    until=(3, 11),
)
@handles("POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE", since=(3, 12))
def _none_test(run, state, ins, shadow) -> After:
    """``avg if avg is None else ...`` of a number that varies: its type (which the
    guard checks) decides, not its value: the number stays followed."""
    if shadow:
        shadow[-1] = None
    return None


@handles("IS_OP")
def _identity(run, state, ins, shadow) -> After:
    """``v is None`` / ``v is not None``: the same; other identity tests take the value."""
    if len(shadow) >= 2 and any(cpython.stack_item(state.frame, d) is None for d in (0, 1)):
        shadow[-1] = shadow[-2] = None
        return None
    _consume(run, shadow, 2)
    return None


@handles("CALL", "CALL_FUNCTION_EX")
@handles("CALL_KW", since=(3, 13))
def _call(run, state, ins, shadow) -> After:
    operands = shadow[len(shadow) - _pops(ins) :]
    top = 0
    if ins.opname == "CALL_KW":  # 3.13: the keyword names' tuple is on top, not an argument
        operands, top = operands[:-1], 1
    state.call_syms = list(operands) if any(operands) else None
    state.call_values = None
    if state.call_syms is not None and container_items.appended(run, state, ins, operands):
        state.call_syms = None  # ``per.append(v)``: the list the call built keeps v's symbol
    if ins.opname == "CALL_FUNCTION_EX":  # ``fn(*args, **kwargs)``: the packed items' symbols
        unpacked = packed_syms.unpacked_operands(run, state, ins)
        if unpacked is not None:
            state.call_syms, state.call_values = unpacked
    elif state.call_syms is not None:  # a callee stepped into takes its symbols (passed_syms.py)
        count = len(operands)
        depths = range(top + count - 1, top - 1, -1)
        state.call_values = [cpython.stack_item(state.frame, depth) for depth in depths]
    before = len(run.tape.callouts)

    def after() -> None:
        leftover, state.call_syms, state.call_values = state.call_syms, None, None
        result_sym = state.call_result_sym
        state.call_result_sym = None
        if leftover:
            for sym in leftover:
                if sym is not None:
                    run.concretize(sym)
        returned, state.returned = state.returned, None
        if returned is not None and result_sym is None:
            value, sym = returned
            if cpython.stack_item(state.frame, 0) is value:  # what the callee returned
                result_sym = sym
            else:  # a hook or wrapper made another value of it
                run.concretize(sym)
        if result_sym is not None:
            set_top(state, result_sym)
        else:
            landed_callout(run, state, before)

    return after


@handles("RETURN_VALUE")
def _return_value(run, state, ins, shadow) -> After:
    sym = shadow[-1] if shadow else None
    if sym is not None:
        value = cpython.stack_item(state.frame, 0)
        if run.frames and run.frames[0] is state and len(run.frames) == 1:
            run.result_sym = (value, sym)
        elif not passed_syms.hand_back(run, state, value, sym):
            run.concretize(sym)
    return None


@handles("STORE_ATTR")
def _store_attr(run, state, ins, shadow) -> After:
    if len(shadow) >= 2 and shadow[-2] is not None:
        owner = cpython.stack_item(state.frame, 0)
        if user_code.store_runs_code(owner, ins.argval):
            run.concretize(shadow[-2])  # the setter gets the number, not its symbol
            return None
        run.store_symbolic(
            (id(owner), ins.argval), owner, cpython.stack_item(state.frame, 1), shadow[-2]
        )
    return None


@handles("STORE_SUBSCR")
def _store_subscr(run, state, ins, shadow) -> After:
    container, key = cpython.stack_item(state.frame, 1), cpython.stack_item(state.frame, 0)
    # ``visits[t] += 1`` into a tensor: a varying int index is lifted into the graph.
    lifted = lifted_index.register(run, state, shadow)
    # Where the value goes (``y[i] = x``, ``hist[step] = loss``, ``d[(i, "a")] = v``):
    # the replay stores at the recorded key, so a symbolic key is guarded by value.
    if shadow and shadow[-1] is not None:
        run.concretize(shadow[-1])
        shadow[-1] = None
    taint_builds.concretize_items(run, key)
    if len(shadow) >= 3 and shadow[-3] is not None:
        if isinstance(container, torch.Tensor) or user_code.store_runs_code(container, None):
            run.concretize(shadow[-3])
        else:
            run.store_symbolic(
                (id(container), key), container, cpython.stack_item(state.frame, 2), shadow[-3]
            )
    elif not isinstance(container, torch.Tensor):
        run.stored_plain(container, key)
    return lifted


@handles("STORE_GLOBAL")
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
