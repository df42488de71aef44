"""Opcode handlers of the monitor, registered by opcode name.

Each handler runs *before* its instruction executes, reads the operands off
the value stack, and may return a continuation that runs at the next event of
the same frame, when the instruction's outputs are on the stack (the two
phases of the design).  ``@handles`` checks that the name is a real opcode of
the running interpreter, so a handler for a renamed opcode fails loudly at
import instead of silently never firing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from fullgraph.runtime import cpython
from fullgraph.runtime.sources import CellSource, ConstSource, ItemSource

if TYPE_CHECKING:
    from fullgraph.runtime.run import MonitorRun
    from fullgraph.runtime.state import FrameState

After = Callable[[], None] | None
Handler = Callable[["MonitorRun", "FrameState", object], After]
HANDLERS: dict[str, Handler] = {}


def handles(*names: str):
    def register(fn: Handler) -> Handler:
        for name in names:
            if not cpython.opcode_exists(name):
                continue  # not an opcode of this interpreter version
            HANDLERS[name] = fn
        return fn

    return register


def tos(state: FrameState, depth: int = 0):
    return cpython.stack_item(state.frame, depth)


@handles("LOAD_GLOBAL")
def load_global(run: MonitorRun, state: FrameState, ins) -> After:
    name = ins.argval
    globals_dict = state.frame.f_globals

    def after() -> None:
        if (id(globals_dict), name) in run.written:
            run.loaded_written((id(globals_dict), name), tos(state))
        elif name in globals_dict:
            source = ItemSource(ConstSource(run.globals_name(globals_dict)), name)
            run.read(source, tos(state))

    return after


@handles("LOAD_ATTR")
def load_attr(run, state, ins) -> After:
    owner = tos(state)
    name = ins.argval

    def after() -> None:
        run.read_attr(owner, name, tos(state))

    after.on_exception = lambda error: run.read_missing_attr(owner, name, error)
    return after


@handles("LOAD_METHOD")
def load_method(run, state, ins) -> After:
    owner = tos(state)
    name = ins.argval

    def after() -> None:
        # [method, self] when the attribute is a method found on the type (decided
        # by the owner's type, which is guarded); [NULL, value] otherwise.
        if tos(state, 1) is cpython.NULL:
            run.read_attr(owner, name, tos(state))

    return after


@handles("BINARY_SUBSCR")
def binary_subscr(run, state, ins) -> After:
    container, key = tos(state, 1), tos(state)

    def after() -> None:
        run.read_item(container, key, tos(state))

    # A missing key or index decides an ``except`` path: guard that it is missing.
    after.on_exception = lambda error: run.read_missing_item(container, key, error)
    return after


@handles("LOAD_DEREF", "LOAD_CLASSDEREF")
def load_deref(run, state, ins) -> After:
    index = cpython.free_var_index(state.frame.f_code, ins.arg)
    function = cpython.frame_function(state.frame)

    def after() -> None:
        if index is None or function is None:
            return
        cell = function.__closure__[index]
        if id(cell) in run.written_cells:
            return
        fn_source = run.source_of(function)
        if fn_source is not None:
            run.read(CellSource(fn_source, index), tos(state))

    return after


@handles("STORE_DEREF")
def store_deref(run, state, ins) -> After:
    index = cpython.free_var_index(state.frame.f_code, ins.arg)
    function = cpython.frame_function(state.frame)
    if index is not None and function is not None:
        cell = function.__closure__[index]
        fn_source = run.source_of(function)
        run.written_cells.add(id(cell))
        if fn_source is not None:
            run.mutate_cell(CellSource(fn_source, index), cell)
    return None


@handles("STORE_ATTR")
def store_attr(run, state, ins) -> After:
    run.store_attr(tos(state), ins.argval, value=tos(state, 1))
    return None


@handles("DELETE_ATTR")
def delete_attr(run, state, ins) -> After:
    run.store_attr(tos(state), ins.argval, delete=True)
    return None


@handles("STORE_SUBSCR")
def store_subscr(run, state, ins) -> After:
    run.store_item(tos(state, 1), tos(state))
    return None


@handles("DELETE_SUBSCR")
def delete_subscr(run, state, ins) -> After:
    run.store_item(tos(state, 1), tos(state), delete=True)
    return None


@handles("STORE_GLOBAL", "DELETE_GLOBAL")
def store_global(run, state, ins) -> After:
    run.store_global(state.frame.f_globals, ins.argval)
    return None


@handles("GET_ITER")
def get_iter(run, state, ins) -> After:
    iterable = tos(state)

    def after() -> None:
        run.derive_iterator(tos(state), iterable, "iter")

    return after


@handles("FOR_ITER")
def for_iter(run, state, ins) -> After:
    iterator = tos(state)
    depth = cpython.stack_depth(state.frame)

    def after() -> None:
        if cpython.stack_depth(state.frame) > depth:
            run.iterator_yielded(iterator, tos(state))
        else:
            run.iterator_exhausted(iterator)

    return after


@handles("UNPACK_SEQUENCE")
def unpack_sequence(run, state, ins) -> After:
    sequence = tos(state)
    count = ins.arg

    def after() -> None:
        run.unpacked(sequence, [tos(state, i) for i in range(count)])

    return after


@handles("CONTAINS_OP")
def contains_op(run, state, ins) -> After:
    container, item = tos(state), tos(state, 1)
    negated = ins.arg == 1  # `not in`

    def after() -> None:
        result = tos(state)
        run.read_membership(container, item, (not result) if negated else result)

    return after


@handles("KW_NAMES")
def kw_names(run, state, ins) -> After:
    state.kwnames = state.frame.f_code.co_consts[ins.arg]
    return None


@handles("CALL")
def call(run, state, ins) -> After:
    argc = ins.arg
    kwnames = state.kwnames or ()
    state.kwnames = None
    bound = tos(state, argc + 1)
    if bound is cpython.NULL:
        fn, fn_depth = tos(state, argc), argc
        values = [tos(state, argc - 1 - i) for i in range(argc)]
    else:
        fn, fn_depth = bound, argc + 1
        values = [tos(state, argc - i) for i in range(argc + 1)]
    split = len(values) - len(kwnames)
    args, kwargs = tuple(values[:split]), dict(zip(kwnames, values[split:]))
    return run.call(state, fn, args, kwargs, lambda: tos(state), fn_depth)


@handles("CALL_FUNCTION_EX")
def call_function_ex(run, state, ins) -> After:
    has_kwargs = bool(ins.arg & 1)
    fn = tos(state, 1 + has_kwargs)
    args = tuple(tos(state, has_kwargs))
    kwargs = dict(tos(state)) if has_kwargs else {}
    return run.call(state, fn, args, kwargs, lambda: tos(state), 1 + has_kwargs)
