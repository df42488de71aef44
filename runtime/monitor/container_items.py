"""Symbolic numbers read back out of a container the run built with them.

``vals = [a.item(), b.item()]``, ``logs = {"ce": ce.item(), ...}`` (a literal or a
comprehension, see ``taint_builds``) remember their items' symbols in
``run.container_syms``.  Reading an item back by a constant index or key
(``vals[0]``, ``logs["ce"]``) or iterating the list (``for v in vals``,
``[2 * v for v in vals]``) takes the item's symbol, so a replay computes it from
the call's own numbers: otherwise every such read pins the number (a record per
call for a training step that logs its losses).

An item is taken only while the container still holds the very object the symbol
stands for (a callout may have reordered the list: ``random.shuffle(vals)``); any
other read of the container falls back to :func:`read_containers`, which guards
the numbers by value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fullgraph.runtime import cpython
from fullgraph.runtime.monitor import taint_builds
from fullgraph.runtime.monitor.taint_stack import After, set_top
from fullgraph.runtime.symbolic.scalars import Op, Sym

if TYPE_CHECKING:
    from fullgraph.runtime.monitor.run import MonitorRun
    from fullgraph.runtime.monitor.state import FrameState

_SEQUENCES = (list, tuple)


def step(run: MonitorRun, state: FrameState, ins: Any, shadow: list) -> After | bool:
    """The after-phase of an instruction reading an item out of such a container;
    False where the instruction is not one (the caller guards the items by value)."""
    name = ins.opname
    if name == "BINARY_SUBSCR":
        return _subscript(run, state, shadow)
    if name == "GET_ITER":
        return _get_iter(run, state)
    if name == "FOR_ITER":
        return _for_iter(run, state)
    if name == "BINARY_OP" and cpython.BINARY_OPS.get(ins.arg, (None,))[0] == "%":
        return _percent_format(run, state, shadow)
    return False


def read_containers(run: MonitorRun, state: FrameState, ins: Any) -> None:
    """``vals[0]``, ``sum(vals)``, ``"%d-%d" % (n, m)``, ``for v in vals``: an instruction
    that reads a container the run built with symbolic items takes the items' numbers
    where no symbol follows them: those are guarded by value (correct, less reusable)."""
    pops = cpython.operands_read(ins)
    if not pops or keeps_items(run, state, ins):
        return
    for depth in range(min(pops, cpython.stack_depth(state.frame))):
        taint_builds.concretize_items(run, cpython.stack_item(state.frame, depth))


# A list method that stores its argument into an outside list as it is: the mock
# replays the call with the container rebuilt from its items' symbols
# (``history.append({"loss": loss.item()})``).
_STORING_METHODS = {list.append: 0, list.insert: 1}


# Reductions of a built list of numbers followed as an expression (``sum(per_class)``).
_REDUCTIONS = {sum: "sum", max: "max", min: "min"}


def keeps_items(run: MonitorRun, state: FrameState, ins: Any) -> bool:
    """Whether ``ins`` stores a container the run built with symbolic items into an
    outside list (``history.append(logs)``), or reduces one (``sum(per_class)``), so
    that it needs no number by value."""
    if ins.opname in ("LOAD_ATTR", "LOAD_METHOD") and ins.argval == "append":
        return type(cpython.stack_item(state.frame, 0)) is list  # ``per.append``: no item read
    if ins.opname != "CALL":
        return False
    fn, _, args, kwargs = cpython.call_operands(
        ins, lambda depth: cpython.stack_item(state.frame, depth), state.kwnames
    )
    if _reduction(run, state, fn, args, kwargs) or (fn is len and len(args) == 1):
        return True  # (``len(per)`` reads no item)
    owner = getattr(fn, "__self__", None)
    if owner is not None:  # a bound method: its receiver first, as the unbound form
        fn, args = getattr(type(owner), getattr(fn, "__name__", ""), None), (owner, *args)
    appends = fn is list.append and len(args) == 2 and type(args[0]) is list
    if appends and run.source_of(args[0]) is None and type(args[1]) in (int, float, bool):
        return True  # ``per.append(v)`` to a list the call made reads none of its items
    position = _STORING_METHODS.get(fn) if isinstance(fn, type(list.append)) else None
    if position is None or kwargs or len(args) != position + 2:
        return False
    stored = args[-1]
    return (
        type(args[0]) is list
        and run.source_of(args[0]) is not None
        and (id(stored) in run.container_syms and not any(a is stored for a in args[:-1]))
    )


def appended(run: MonitorRun, state: FrameState, ins: Any, operands: list) -> bool:
    """``per.append(v)`` of a symbolic number to a list the call made: the list
    remembers the item's symbol, as one built as ``[a, b]`` does."""
    if ins.opname != "CALL" or state.kwnames or operands[-1] is None or any(operands[:-1]):
        return False
    fn, _, args, _ = cpython.call_operands(
        ins, lambda depth: cpython.stack_item(state.frame, depth), state.kwnames
    )
    owner = getattr(fn, "__self__", None)
    if owner is not None:
        fn, args = getattr(type(owner), getattr(fn, "__name__", ""), None), (owner, *args)
    if fn is not list.append or len(args) != 2 or type(args[0]) is not list:
        return False
    if run.source_of(args[0]) is not None:
        return False  # an outside list: its append is a store the mock replays
    run.container_syms.setdefault(id(args[0]), {})[len(args[0])] = operands[-1]
    run.keepalive.append(args[0])
    return True


def _reduction(run: MonitorRun, state: FrameState, fn: Any, args: tuple, kwargs: dict) -> bool:
    """``sum(per)``, ``max(per)`` of a list or tuple the run built with numbers of one
    type (symbols while it holds them): the call's result is the expression."""
    name = _REDUCTIONS.get(fn) if isinstance(fn, type(sum)) else None
    items = args[0] if len(args) == 1 else None
    if name is None or kwargs or type(items) not in _SEQUENCES or not items:
        return False
    if id(items) not in run.container_syms or len({type(v) for v in items}) != 1:
        return False  # (mixed ints and floats: which one wins decides the type)
    if type(items[0]) not in (int, float):
        return False
    operands = [_item_sym(run, items, i) or value for i, value in enumerate(items)]
    if not any(isinstance(o, Sym) for o in operands):
        return False
    places = ", ".join(f"{{{i}}}" for i in range(len(operands)))
    state.call_result_sym = Op(fn(items), f"{name}(({places},))", tuple(operands))
    return True


def _item_sym(run: MonitorRun, container: Any, key: Any) -> Any:
    """The symbol of ``container[key]``, while it still holds the object it stands for."""
    items = run.container_syms.get(id(container))
    sym = items.get(key) if items else None
    if sym is None:
        return None
    try:
        held = container[key]
    except (IndexError, KeyError, TypeError):
        return None
    return sym if held is sym.value else None


def _subscript(run: MonitorRun, state: FrameState, shadow: list) -> After | bool:
    container = cpython.stack_item(state.frame, 1)
    key = cpython.stack_item(state.frame, 0)
    if len(shadow) < 2 or shadow[-1] is not None or shadow[-2] is not None:
        return False  # a symbolic index (``lifted_index``) or a symbolic operand
    if type(container) in _SEQUENCES and type(key) is int:
        if not -len(container) <= key < len(container):
            return False
        key %= len(container)
    elif type(container) is not dict:
        return False
    try:
        sym = _item_sym(run, container, key)
    except TypeError:  # an unhashable key
        return False
    if sym is None:
        return False
    return lambda: set_top(state, sym)


def _percent_format(run: MonitorRun, state: FrameState, shadow: list) -> After | bool:
    """``"%d: %.3f" % (epoch, loss)`` of a tuple the run built with symbolic items."""
    text, items = cpython.stack_item(state.frame, 1), cpython.stack_item(state.frame, 0)
    if type(text) is not str or type(items) is not tuple or any(shadow[-2:]):
        return False
    operands = []
    for index, value in enumerate(items):
        sym = _item_sym(run, items, index)
        if sym is None and not _plain_operand(value):
            return False
        operands.append(sym if sym is not None else value)
    if not any(isinstance(o, Sym) for o in operands):
        return False
    return taint_builds.percent_format(run, state, text, (tuple(operands), True))


def _plain_operand(value: Any) -> bool:
    return value is None or type(value) in (int, float, bool, str)


def _get_iter(run: MonitorRun, state: FrameState) -> After | bool:
    iterable = cpython.stack_item(state.frame, 0)
    if type(iterable) not in _SEQUENCES or id(iterable) not in run.container_syms:
        return False

    def after() -> None:
        iterator = cpython.stack_item(state.frame, 0)
        run.item_iterators[id(iterator)] = [iterable, 0]
        run.keepalive.append(iterator)

    return after


def _for_iter(run: MonitorRun, state: FrameState) -> After | bool:
    iterator = cpython.stack_item(state.frame, 0)
    position = run.item_iterators.get(id(iterator))
    if position is None:
        return False
    depth = cpython.stack_depth(state.frame)

    def after() -> None:
        if cpython.stack_depth(state.frame) <= depth:
            return  # exhausted: the loop jumped past its end
        iterable, index = position
        position[1] = index + 1
        item = cpython.stack_item(state.frame, 0)
        sym = _item_sym(run, iterable, index) if index < len(iterable) else None
        set_top(state, sym if sym is not None and sym.value is item else None)

    return after
