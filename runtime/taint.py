"""Following symbolic scalars through a frame's value stack and locals.

Runs before every instruction of an observed frame, ahead of the opcode
handlers.  ``FrameState.shadow`` mirrors the value stack (one entry per slot:
a :class:`~fullgraph.runtime.symbolic.Sym` or ``None``) and
``FrameState.local_syms`` the fast locals.  Instructions that combine
numbers extend the expression; branches on a symbolic value record a
condition; anything else that consumes one *concretizes* it (its exact
value is guarded), which is always correct, merely less reusable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from fullgraph.runtime import cpython, sizes
from fullgraph.runtime.symbolic import BINARY, COMPARE, Leaf, Op, Sym

if TYPE_CHECKING:
    from fullgraph.runtime.run import MonitorRun
    from fullgraph.runtime.state import FrameState

After = Callable[[], None] | None

# How many stack slots an instruction consumes (3.11), for those not modelled below.
_FIXED_POPS = {
    "POP_TOP": 1,
    "STORE_ATTR": 2,
    "STORE_SUBSCR": 3,
    "STORE_GLOBAL": 1,
    "STORE_DEREF": 1,
    "STORE_NAME": 1,
    "LOAD_ATTR": 1,
    "LOAD_METHOD": 1,
    "BINARY_SUBSCR": 2,
    "IS_OP": 2,
    "CONTAINS_OP": 2,
    "RETURN_VALUE": 1,
    "YIELD_VALUE": 1,
    "GET_ITER": 1,
    "UNPACK_SEQUENCE": 1,
    "UNPACK_EX": 1,
    "LIST_APPEND": 1,
    "SET_ADD": 1,
    "MAP_ADD": 2,
    "LIST_EXTEND": 1,
    "SET_UPDATE": 1,
    "DICT_UPDATE": 1,
    "DICT_MERGE": 1,
    "DELETE_SUBSCR": 2,
    "DELETE_ATTR": 1,
    "BEFORE_WITH": 1,
    "PRINT_EXPR": 1,
    "GET_LEN": 0,
    "BINARY_SLICE": 3,
    "STORE_SLICE": 4,
    "LIST_TO_TUPLE": 1,
    "IMPORT_NAME": 2,
    "POP_JUMP_FORWARD_IF_NONE": 1,
    "POP_JUMP_FORWARD_IF_NOT_NONE": 1,
    "POP_JUMP_BACKWARD_IF_NONE": 1,
    "POP_JUMP_BACKWARD_IF_NOT_NONE": 1,
}
_NO_POPS = frozenset(
    [
        "NOP",
        "RESUME",
        "CACHE",
        "PUSH_NULL",
        "KW_NAMES",
        "PRECALL",
        "LOAD_GLOBAL",
        "LOAD_DEREF",
        "LOAD_CLOSURE",
        "LOAD_CLASSDEREF",
        "LOAD_NAME",
        "LOAD_ASSERTION_ERROR",
        "LOAD_BUILD_CLASS",
        "JUMP_FORWARD",
        "JUMP_BACKWARD",
        "JUMP_BACKWARD_NO_INTERRUPT",
        "FOR_ITER",
        "MAKE_CELL",
        "COPY_FREE_VARS",
        "EXTENDED_ARG",
        "RETURN_GENERATOR",
        "GEN_START",
        "POP_EXCEPT",
        "PUSH_EXC_INFO",
        "CHECK_EXC_MATCH",
        "RERAISE",
        "LOAD_CONST",
        "IMPORT_FROM",
        "DELETE_GLOBAL",
        "DELETE_DEREF",
        "DELETE_NAME",
    ]
)


def _pops(ins) -> int | None:
    name = ins.opname
    if name in _NO_POPS:
        return 0
    if name in _FIXED_POPS:
        return _FIXED_POPS[name]
    if name in (
        "BUILD_TUPLE",
        "BUILD_LIST",
        "BUILD_SET",
        "BUILD_STRING",
        "BUILD_SLICE",
        "RAISE_VARARGS",
    ):
        return ins.arg
    if name == "BUILD_MAP":
        return 2 * ins.arg
    if name == "BUILD_CONST_KEY_MAP":
        return ins.arg + 1
    if name == "CALL":
        return ins.arg + 2
    if name == "CALL_FUNCTION_EX":
        return 3 + (ins.arg & 1)
    if name == "FORMAT_VALUE":
        return 1 + bool(ins.arg & 4)
    return None  # unknown: every symbolic slot is treated as consumed


def _sync(state: FrameState) -> list:
    depth = cpython.stack_depth(state.frame)
    shadow = state.shadow
    if len(shadow) > depth:
        del shadow[depth:]
    elif len(shadow) < depth:
        shadow.extend([None] * (depth - len(shadow)))
    return shadow


def _set_top(state: FrameState, sym: Sym | None) -> None:
    shadow = _sync(state)
    if shadow:
        shadow[-1] = sym


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
        pops = _pops(ins)
        consumed = shadow if pops is None else shadow[len(shadow) - pops :] if pops else []
        for sym in consumed:
            if sym is not None:
                run.concretize(sym)
        for i in range(len(shadow) - len(consumed), len(shadow)):
            shadow[i] = None
    if name in ("LOAD_ATTR", "LOAD_GLOBAL", "BINARY_SUBSCR", "LOAD_DEREF", "LOAD_METHOD"):
        return lambda: _symbolic_load(run, state)
    return None


def _symbolic_load(run: MonitorRun, state: FrameState) -> None:
    leaf = run.take_symbolic_read(cpython.stack_item(state.frame, 0))
    if leaf is not None:
        _set_top(state, leaf)


_HANDLERS: dict[str, Callable] = {}


def _handles(*names: str):
    def register(fn):
        for name in names:
            if cpython.opcode_exists(name):
                _HANDLERS[name] = fn
        return fn

    return register


@_handles("LOAD_FAST", "LOAD_FAST_CHECK")
def _load_fast(run, state, ins, shadow) -> After:
    sym = state.local_syms.get(ins.arg)
    return (lambda: _set_top(state, sym)) if sym is not None else None


@_handles("STORE_FAST")
def _store_fast(run, state, ins, shadow) -> After:
    sym = shadow[-1] if shadow else None
    if sym is None:
        state.local_syms.pop(ins.arg, None)
    else:
        state.local_syms[ins.arg] = sym
    return None


@_handles("DELETE_FAST")
def _delete_fast(run, state, ins, shadow) -> After:
    state.local_syms.pop(ins.arg, None)
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
    symbol = BINARY.get(ins.arg, (None,))[0]
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


@_handles("UNARY_NEGATIVE", "UNARY_NOT", "UNARY_POSITIVE", "UNARY_INVERT")
def _unary(run, state, ins, shadow) -> After:
    if not shadow or shadow[-1] is None:
        return None
    template = {
        "UNARY_NEGATIVE": "(-{0})",
        "UNARY_NOT": "(not {0})",
        "UNARY_POSITIVE": "(+{0})",
        "UNARY_INVERT": "(~{0})",
    }[ins.opname]
    syms, values = _operands(state, shadow, 1)
    return _combine(run, state, syms, values, template)


@_handles(*cpython.BRANCH_OPS)
def _branch(run, state, ins, shadow) -> After:
    if shadow and shadow[-1] is not None:
        run.branch_on(shadow[-1], bool(cpython.stack_item(state.frame, 0)))
        if ins.opname.startswith("POP_JUMP"):
            shadow[-1] = None
    return None


@_handles("FORMAT_VALUE")
def _format_value(run, state, ins, shadow) -> After:
    has_spec = bool(ins.arg & 4)
    count = 1 + has_spec
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
    conversion = {0: "{0}", 1: "str({0})", 2: "repr({0})", 3: "ascii({0})"}[ins.arg & 3]
    template = f"format({conversion}, {{1}})" if has_spec else f"format({conversion})"
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
def _call(run, state, ins, shadow) -> After:
    pops = _pops(ins)
    state.call_syms = (
        list(shadow[len(shadow) - pops :]) if any(shadow[len(shadow) - pops :]) else None
    )
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
