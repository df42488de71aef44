"""Opcode handlers of the monitor, registered by opcode name.

Each handler runs *before* its instruction executes, reads the operands off
the value stack, and may return a continuation that runs at the next event of
the same frame, when the instruction's outputs are on the stack (the two
phases of the design).  ``@handles`` checks that the name is a real opcode of
the running interpreter, so a handler for a renamed opcode fails loudly at
import instead of silently never firing.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import TYPE_CHECKING

from fullgraph.runtime import cpython
from fullgraph.runtime.monitor import (
    class_slots,
    closure_sources,
    container_truth,
    context_entry,
    hidden_state_reads,
    identity_tests,
    lifted_arguments,
    method_lookups,
    speculation,
    type_checks,
    unobserved_reads,
)
from fullgraph.runtime.monitor.callouts import MUTABLE_CONTAINERS
from fullgraph.runtime.monitor.user_code import is_user_code
from fullgraph.runtime.sources import AttrSource, TypeOfSource

if TYPE_CHECKING:
    from fullgraph.runtime.monitor.run import MonitorRun
    from fullgraph.runtime.monitor.state import FrameState

After = Callable[[], None] | None
Handler = Callable[["MonitorRun", "FrameState", object], After]
HANDLERS: dict[str, Handler] = {}


def handles(*names: str, since: tuple | None = None, until: tuple | None = None):
    """Register a handler for opcodes ``names`` on Python versions [since, until]."""

    def register(fn: Handler) -> Handler:
        for name in names:
            if cpython.registers(name, since, until):
                HANDLERS[name] = fn
        return fn

    return register


def tos(state: FrameState, depth: int = 0):
    return cpython.stack_item(state.frame, depth)


@handles("LOAD_ATTR")
@handles("LOAD_METHOD", until=(3, 11))
def load_attr(run, state, ins) -> After:
    owner = tos(state)
    name = ins.argval
    class_slots.read_attribute_hooks(run, owner, _GET_HOOKS)
    cold = method_lookups.cached_property_cold(owner, name)
    # (asked now: a program's descriptor stores the value into the instance as it runs)
    ours = cold is not None and (id(owner), name) in run.written

    def after() -> None:
        # A method load pushes [method, self] when the attribute is a function found
        # on the type, else the value and a NULL (their order depends on the version).
        depth = cpython.loaded_depth(ins, lambda depth: tos(state, depth))
        if depth is not None and cold is not None:
            method_lookups.read_cached_property(run, owner, name, cold, tos(state, depth), ours)
        elif depth is not None:
            run.read_attr(owner, name, tos(state, depth))
        else:  # [method, self]: the function found on the type, under self
            method_lookups.read_method(run, owner, name, tos(state, 1))

    # A missing attribute that decides an ``except`` path: guard that it is missing.
    after.on_exception = lambda error: run.read_missing_attr(owner, name, error)

    return after


@handles("LOAD_SUPER_ATTR", since=(3, 12))
def load_super_attr(run, state, ins) -> After:
    """``super().name``: [super, class, self] -> the attribute (or [method, self])."""
    start, obj = tos(state, 1), tos(state)
    name = ins.argval

    def after() -> None:
        value = tos(state)
        if ins.arg & 1:  # [method, self], or the value beside a NULL (order by version)
            below = tos(state, 1)
            value = value if below is cpython.NULL else below
        if isinstance(start, type):
            method_lookups.read_super_attr(run, start, obj, name, value)

    return after


@handles("BINARY_SUBSCR")
def binary_subscr(run, state, ins) -> After:
    container, key = tos(state, 1), tos(state)
    if run.speculating is not None and speculation.inserts_missing_key(run, container, key):
        speculation.block(run, state.frame, 1, "reads a missing key of a defaultdict")
        return None
    class_slots.read_protocol(run, container, _GETITEM)

    def after() -> None:
        run.read_item(container, key, tos(state))

    # A missing key or index decides an ``except`` path: guard that it is missing.
    after.on_exception = lambda error: run.read_missing_item(container, key, error)
    return after


@handles("BINARY_SLICE", since=(3, 12))
def binary_slice(run, state, ins) -> After:
    # container[start:stop] without a BUILD_SLICE: [container, start, stop]
    container, key = tos(state, 2), slice(tos(state, 1), tos(state))
    class_slots.read_protocol(run, container, _GETITEM)

    def after() -> None:
        run.read_item(container, key, tos(state))

    return after


@handles("LOAD_DEREF")
@handles("LOAD_CLASSDEREF", until=(3, 11))
@handles("LOAD_FROM_DICT_OR_DEREF", since=(3, 12))
def load_deref(run, state, ins) -> After:
    if ins.opname == "LOAD_FROM_DICT_OR_DEREF" and ins.argval in tos(state):
        return None  # a class body's own name: read from its namespace, not the cell
    index = cpython.free_var_index(state.frame.f_code, ins.arg)
    function = cpython.frame_function(state.frame)

    def after() -> None:
        if index is None or function is None:
            return
        cell = function.__closure__[index]
        if id(cell) in run.written_cells:  # the value the run stored (maybe symbolic)
            run.loaded_written((id(cell), None), tos(state))
            return
        source = closure_sources.cell_source(run, function, index)
        if source is not None:
            run.read(source, tos(state))

    def on_exception(error: BaseException) -> None:
        # ``try: t * k except NameError:`` with ``k``'s cell still empty: filled later
        # (``nonlocal k; k = v`` elsewhere), the call takes the other path.
        if isinstance(error, NameError) and index is not None and function is not None:
            run.refuse(f"{ins.argval} is read from an empty closure cell")

    after.on_exception = on_exception
    return after


@handles("STORE_DEREF")
def store_deref(run, state, ins) -> After:
    index = cpython.free_var_index(state.frame.f_code, ins.arg)
    function = cpython.frame_function(state.frame)
    if index is not None and function is not None:
        cell = function.__closure__[index]
        if run.speculating is not None:
            return speculation.undo_cell_store(run, cell)
        source = closure_sources.cell_source(run, function, index)
        run.written_cells.add(id(cell))
        if source is not None:
            run.mutate_cell(source, cell)
    return None


@handles("MAKE_FUNCTION")
def make_function(run, state, ins) -> After:
    maker = cpython.frame_function(state.frame)

    def after() -> None:
        made = tos(state)
        if isinstance(made, types.FunctionType):  # its cells: the maker's, or new ones
            run.made_functions[id(made)] = (made, maker)

    return after


def _blocked_store(run, state, depth: int, what: str) -> bool:
    """In a speculative run, a store into anything but its ``ctx`` raises instead."""
    if speculation.allows_store(run, tos(state, depth)):
        return False
    speculation.block(run, state.frame, depth, what)
    return True


@handles("STORE_ATTR")
def store_attr(run, state, ins) -> After:
    class_slots.read_attribute_hooks(run, tos(state), ("__setattr__",))
    if not _blocked_store(run, state, 0, f"sets the attribute {ins.argval!r}"):
        run.store_attr(tos(state), ins.argval, value=tos(state, 1))
    return None


@handles("DELETE_ATTR")
def delete_attr(run, state, ins) -> After:
    class_slots.read_attribute_hooks(run, tos(state), ("__delattr__",))
    if not _blocked_store(run, state, 0, f"deletes the attribute {ins.argval!r}"):
        run.store_attr(tos(state), ins.argval, delete=True)
    return None


@handles("STORE_SUBSCR")
def store_subscr(run, state, ins) -> After:
    class_slots.read_protocol(run, tos(state, 1), _SETITEM)
    if not _blocked_store(run, state, 1, "stores an item"):
        run.store_item(tos(state, 1), tos(state))
    return None


@handles("STORE_SLICE", since=(3, 12))
def store_slice(run, state, ins) -> After:
    # container[start:stop] = value: [value, container, start, stop]
    class_slots.read_protocol(run, tos(state, 2), _SETITEM)
    if not _blocked_store(run, state, 2, "stores a slice"):
        run.store_item(tos(state, 2), slice(tos(state, 1), tos(state)))
    return None


@handles("DELETE_SUBSCR")
def delete_subscr(run, state, ins) -> After:
    class_slots.read_protocol(run, tos(state, 1), _DELITEM)
    if not _blocked_store(run, state, 1, "deletes an item"):
        run.store_item(tos(state, 1), tos(state), delete=True)
    return None


@handles("STORE_GLOBAL", "DELETE_GLOBAL")
def store_global(run, state, ins) -> After:
    if run.speculating is not None:
        return speculation.undo_global_store(run, state.frame.f_globals, ins.argval)
    run.store_global(state.frame.f_globals, ins.argval)
    return None


@handles("GET_ITER")
def get_iter(run, state, ins) -> After:
    iterable = tos(state)
    class_slots.read_protocol(run, iterable, class_slots.ITERATION)

    def after() -> None:
        run.derive_iterator(tos(state), iterable, "iter")

    return after


@handles("BINARY_OP")
def binary_op(run, state, ins) -> After:
    """``log += [v]``, ``cfg |= extra`` on a container from outside: the interpreter calls
    ``__iadd__`` / ``__ior__`` itself, changing it in place, with no call to observe."""
    symbol = cpython.NB_OPS[ins.arg] if ins.arg < len(cpython.NB_OPS) else ""
    target, operand = tos(state, 1), tos(state)
    class_slots.read_binary(run, symbol, target, operand)
    read_operands(run, operand, *(() if symbol.endswith("=") else (target,)))
    if not symbol.endswith("="):
        return None
    if run.speculating is not None and not isinstance(target, speculation.UPDATED_BY_VALUE):
        # A path run must change nothing: ``log += [v]`` changes the list before any store.
        speculation.block(run, state.frame, 1, f"updates a {type(target).__name__} in place")
        return None
    if isinstance(target, MUTABLE_CONTAINERS):
        run.store_inplace(target, _INPLACE_METHODS.get(symbol, symbol), operand)
    else:
        run.inplace_unseen(target, class_slots.inplace_method(symbol))
    return None


@handles("COMPARE_OP")
def compare_op(run, state, ins) -> After:
    read_operands(run, tos(state, 1), tos(state))
    class_slots.read_compare(run, ins.argval, tos(state, 1), tos(state))
    return None


# What the interpreter looks up on the operand's class (monitor/class_slots.py).
_GETITEM = class_slots.single("__getitem__")
_SETITEM = class_slots.single("__setitem__")
_DELITEM = class_slots.single("__delitem__")
_NEXT = class_slots.single("__next__")
_GET_HOOKS = ("__getattribute__", "__getattr__")


@handles(*cpython.BRANCH_OPS)
@handles("UNARY_NOT")
@handles("TO_BOOL", since=(3, 13))
def truth_test(run, state, ins) -> After:
    """``if b:``, ``not b``, ``b and x``: ``__bool__``, else ``__len__``, of b's class;
    for a container of Python's or torch's own, whether it is empty."""
    value = tos(state)
    class_slots.read_protocol(run, value, class_slots.TRUTH)
    container_truth.read_truth(run, value)
    return None


@handles("UNARY_NEGATIVE", "UNARY_INVERT")
@handles("UNARY_POSITIVE", until=(3, 11))
@handles("CALL_INTRINSIC_1", since=(3, 12))
def unary_op(run, state, ins) -> After:
    if ins.opname == "CALL_INTRINSIC_1":
        if ins.arg != cpython.INTRINSIC_UNARY_POSITIVE:
            return None
        name = "__pos__"
    else:
        name = class_slots.UNARY[ins.opname]
    hidden_state_reads.refuse_decimal_arithmetic(run, tos(state))
    class_slots.read_protocol(run, tos(state), class_slots.single(name))
    return None


@handles("BEFORE_WITH")
def before_with(run, state, ins) -> After:
    class_slots.read_protocol(run, tos(state), class_slots.CONTEXT)
    context_entry.before_entering(run, tos(state))
    return None


@handles(*cpython.FORMAT_OPS)
def format_value(run, state, ins) -> After:
    """An f-string's ``{b}``: ``__format__``, which for object's asks ``__str__`` (and
    that ``__repr__``); the value is under the format spec when there is one."""
    spec = ins.opname == "FORMAT_WITH_SPEC" or (ins.opname == "FORMAT_VALUE" and ins.arg & 4)
    value = tos(state, 1 if spec else 0)
    class_slots.read_protocol(run, value, class_slots.FORMAT)
    # ``f"{xs}"``: the text is made of every item, read by the interpreter unobserved.
    read_operands(run, value)
    if isinstance(value, tuple):
        run.read_nested(value)
    return None


def read_operands(run: MonitorRun, *operands: object) -> None:
    """``xs + [9.0]``, ``opts == ["fast"]``, ``d | extra``: the interpreter reads every
    item of a list, dict or set operand from outside, unobserved: guarded whole."""
    for operand in operands:
        if isinstance(operand, (list, dict)):
            run.read_nested(operand)
        elif isinstance(operand, (set, frozenset)):
            run.read_whole(operand)


_INPLACE_METHODS = {"+=": "__iadd__", "|=": "__ior__", "*=": "__imul__", "&=": "__iand__",
                    "-=": "__isub__", "^=": "__ixor__"}  # fmt: skip


@handles("GET_YIELD_FROM_ITER")
def get_yield_from_iter(run, state, ins) -> After:
    """``yield from xs``: the items go to the caller through SEND, unobserved one by
    one, so an external container is read whole."""
    run.read_whole(tos(state))
    class_slots.read_protocol(run, tos(state), class_slots.ITERATION)
    return None


@handles("FOR_ITER")
def for_iter(run, state, ins) -> After:
    iterator = tos(state)
    if run.speculating is not None and run.source_of(iterator) is not None:
        speculation.block(run, state.frame, 0, "advances an iterator from before it")
        return None
    class_slots.read_protocol(run, iterator, _NEXT)
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


@handles("UNPACK_EX")
def unpack_ex(run, state, ins) -> After:
    """``first, *rest = xs``: the rest is a new list of the items after the first ones,
    so the length and every item decide what the names get."""
    sequence = tos(state)
    view = run.iterators.get(id(sequence))
    run.read_nested(view.iterable if view is not None else sequence)
    return None


@handles("MATCH_SEQUENCE", "MATCH_MAPPING", "MATCH_KEYS", "GET_LEN")
def match_container(run, state, ins) -> After:
    """A ``match`` on a list or dict from outside: its patterns test the type, the length,
    the keys and the items (sub-patterns), in C: the subject is guarded whole."""
    subject = tos(state, 1 if ins.opname == "MATCH_KEYS" else 0)
    if isinstance(subject, (list, tuple, dict)):
        run.read_nested(subject)
    return None


@handles("MATCH_CLASS")
def match_class(run, state, ins) -> After:
    """``case P(a=0, b=t)``: ``isinstance(subject, P)``, then the attributes the pattern
    names (positional ones through ``P.__match_args__``), read in C."""
    subject, cls, names = tos(state, 2), tos(state, 1), tos(state)
    source = run.source_of(subject)
    if not isinstance(cls, type):
        return None
    # ``case Base():`` of an ABC asks its registry, as isinstance does.
    after = type_checks.guard(run, isinstance, (subject, cls), lambda: isinstance(subject, cls))
    if source is None:
        return after
    run.read(TypeOfSource(source), type(subject), symbolic=False)
    if not isinstance(subject, cls):
        return after
    positional = tuple(getattr(cls, "__match_args__", ()))[: ins.arg]
    cls_source = run.source_of(cls)
    if ins.arg and cls_source is not None and hasattr(cls, "__match_args__"):
        # which attributes ``P(a, 2)`` names
        run.read(AttrSource(cls_source, "__match_args__"), cls.__match_args__, symbolic=False)
    for name in (*positional, *names):
        if isinstance(name, str) and hasattr(subject, name):
            run.read_attr(subject, name, getattr(subject, name))
    return after


@handles("CONTAINS_OP")
def contains_op(run, state, ins) -> After:
    container, item = tos(state), tos(state, 1)
    class_slots.read_protocol(run, container, class_slots.MEMBERSHIP)
    negated = ins.arg == 1  # `not in`

    def after() -> None:
        result = tos(state)
        run.read_membership(container, item, (not result) if negated else result)

    return after


@handles("IS_OP")
def is_op(run, state, ins) -> After:
    """``a is b`` / ``a is not b``: what decided it (monitor/identity_tests.py)."""
    identity_tests.guard(run, tos(state, 1), tos(state))
    return None


@handles("KW_NAMES", until=(3, 12))
def kw_names(run, state, ins) -> After:
    state.kwnames = state.frame.f_code.co_consts[ins.arg]
    return None


@handles("CALL")
@handles("CALL_KW", since=(3, 13))
def call(run, state, ins) -> After:
    kwnames = state.kwnames
    state.kwnames = None
    fn, fn_depth, args, kwargs = cpython.call_operands(
        ins, lambda depth: tos(state, depth), kwnames
    )
    entered = context_entry.entered_by_a_call(fn, args)
    if entered is not None:  # ``stack.enter_context(lock)``: entered unseen, as by ``with``
        context_entry.before_entering(run, entered)
    lifted = lifted_arguments.register(run, state, fn, args, kwargs)
    after = run.call(state, fn, args, kwargs, lambda: tos(state), fn_depth)
    return lifted_arguments.chained(after, lifted)


@handles("CALL_FUNCTION_EX")
def call_function_ex(run, state, ins) -> After:
    fn_depth, args_depth, kwargs_depth = cpython.call_ex_layout(ins)
    fn, args = tos(state, fn_depth), tos(state, args_depth)
    if isinstance(args, (list, tuple)):
        run.read_whole(args)  # f(*dims) with dims from outside: its items become arguments
        args = tuple(args)
    elif not isinstance(args, tuple):
        # f(*iterator): the interpreter consumes it as the call starts (running a
        # generator's frames under observation); reading it here would consume it.
        # An outside set or deque is read whole (its length is the argument count).
        if isinstance(args, unobserved_reads.MUTABLE_SNAPSHOTS):
            run.read_whole(args)
        target = fn.__func__ if isinstance(fn, types.MethodType) else fn
        if isinstance(target, types.FunctionType) and is_user_code(target.__code__):
            return None  # stepped into: its frame sees the arguments
        run.refuse(f"a call with *arguments from an iterator ({type(args).__name__})")
        return None
    kwargs = tos(state, kwargs_depth) if kwargs_depth is not None else {}
    if isinstance(kwargs, dict):
        run.read_whole(kwargs)  # f(**cfg) with cfg from outside
    kwargs = dict(kwargs)
    return run.call(state, fn, args, kwargs, lambda: tos(state), fn_depth)


@handles("LIST_EXTEND", "SET_UPDATE", "DICT_UPDATE", "DICT_MERGE")
def unpack_into(run, state, ins) -> After:
    """``[*xs, 1]``, ``f(a, *dims)``, ``{**cfg}``, ``f(**cfg, k=1)``: the interpreter copies
    all of an external container, unobserved item by item."""
    run.read_whole(tos(state))
    return None
