"""Symbolic scalars through f-strings and container literals.

``f"{n}x{m}"`` keeps the message an expression of the numbers it formats (a
size that varies is not pinned by a log line); ``[a, b]``, ``(n, 2)`` and
``{"k": n}`` remember which items are symbolic, so a later read of the item
follows the same expression; a container put into another one is remembered by
the outer one, whose reads read it too.
"""

from __future__ import annotations

from fullgraph.runtime import cpython
from fullgraph.runtime.monitor.taint_stack import (
    After,
    handles,
    landed_callout,
    set_at,
    set_top,
    stack_operands,
)
from fullgraph.runtime.symbolic import sizes
from fullgraph.runtime.symbolic.scalars import Op

# Instructions that put a container into another: ``[[n]]``, ``{"ids": [n]}``,
# ``rows[i] = [n]``.  The outer container has no symbols of its own for the inner
# one's items; a read of the outer by C code (``torch.tensor([[token]])``, ``print``)
# reads them too, so the outer remembers the inner ones (``run.nested_containers``).
# Moved on (returned, stored), the mock rebuilds the inner ones from their symbols.
NESTS = frozenset(["BUILD_TUPLE", "BUILD_LIST", "BUILD_MAP", "BUILD_CONST_KEY_MAP", "STORE_SUBSCR"])


def nesting(run, state, ins, after: After) -> After:
    """Before ``ins`` puts containers into another: note which hold symbolic items."""
    if ins.opname == "STORE_SUBSCR":
        depths, outer_depth = [2], 1  # ``container[key] = value``: the value goes in
    else:  # a literal: the outer one is on the stack afterwards
        depths = range(min(cpython.operands_read(ins) or 0, cpython.stack_depth(state.frame)))
        outer_depth = None
    inner = [cpython.stack_item(state.frame, depth) for depth in depths]
    inner = [c for c in inner if id(c) in run.container_syms or id(c) in run.nested_containers]
    if not inner:
        return after
    if outer_depth is not None:
        _nest(run, cpython.stack_item(state.frame, outer_depth), inner)
        return after

    def nested() -> None:
        if after is not None:
            after()
        _nest(run, cpython.stack_item(state.frame, 0), inner)

    return nested


def _nest(run, outer, inner: list) -> None:
    run.nested_containers.setdefault(id(outer), []).extend(inner)
    run.keepalive.append(outer)


def concretize_items(run, container, depth: int = 0) -> None:
    """The symbolic items of ``container`` and of the containers nested in it: guarded."""
    for sym in run.container_syms.get(id(container), {}).values():
        if sym is not None:
            run.concretize(sym)
    if depth < 16:
        for inner in run.nested_containers.get(id(container), ()):
            concretize_items(run, inner, depth + 1)


_CONVERSIONS = {0: "{0}", 1: "str({0})", 2: "repr({0})", 3: "ascii({0})"}


@handles("FORMAT_VALUE", until=(3, 12))
def _format_value(run, state, ins, shadow) -> After:
    has_spec = bool(ins.arg & 4)
    conversion = _CONVERSIONS[ins.arg & 3]
    template = f"format({conversion}, {{1}})" if has_spec else f"format({conversion})"
    return _format(run, state, shadow, 1 + has_spec, template)


@handles("CONVERT_VALUE", "FORMAT_SIMPLE", "FORMAT_WITH_SPEC", since=(3, 13))
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
        return lambda: landed_callout(run, state, before)
    syms, values = stack_operands(state, shadow, count)
    operands = tuple(s if s is not None else v for s, v in zip(syms, values))

    def after() -> None:
        if tracker is not None:
            tracker.formatting = False
        set_top(state, Op(cpython.stack_item(state.frame, 0), template, operands))

    return after


def percent_format(run, state, text: str, items: tuple) -> After:
    """``"loss %.4f" % v``, ``"%d: %.3f" % (epoch, v)``: printf-style formatting of
    symbolic numbers (``items``: the right operand's, a Sym or a value each, and whether
    it was a tuple), rebuilt from each call's numbers as an f-string is."""
    operands, packed = items
    places = ", ".join(f"{{{i + 1}}}" for i in range(len(operands)))
    template = f"({{0}} % ({places},))" if packed else f"({{0}} % {places})"

    def after() -> None:
        result = cpython.stack_item(state.frame, 0)
        set_top(state, Op(result, template, (text, *operands)) if type(result) is str else None)

    return after


@handles("BUILD_STRING")
def _build_string(run, state, ins, shadow) -> After:
    count = ins.arg
    if not any(shadow[len(shadow) - count :]):
        return None
    syms, values = stack_operands(state, shadow, count)
    operands = tuple(s if s is not None else v for s, v in zip(syms, values))
    template = "''.join((" + "".join(f"{{{i}}}, " for i in range(count)) + "))"

    def after() -> None:
        set_top(state, Op(cpython.stack_item(state.frame, 0), template, operands))

    return after


def _container_built(run, state, items: dict) -> After:
    """After a container literal: remember which of its items are symbolic."""

    def after() -> None:
        container = cpython.stack_item(state.frame, 0)
        run.container_syms[id(container)] = items
        run.keepalive.append(container)
        set_top(state, None)

    return after


@handles("UNPACK_SEQUENCE")
def _unpack_sequence(run, state, ins, shadow) -> After:
    """``x, lam = mixup_data(x)``: the items of a tuple or list the run built with
    symbolic items keep their symbols on the stack (other containers' are guarded)."""
    container = cpython.stack_item(state.frame, 0)
    if shadow and shadow[-1] is not None:  # a followed value unpacked (an array): by value
        run.concretize(shadow[-1])
    if shadow:
        shadow[-1] = None
    items = run.container_syms.get(id(container))
    if not items:
        return None
    if type(container) not in (tuple, list) or len(container) != ins.arg:
        concretize_items(run, container)
        return None

    def after() -> None:
        for index in range(ins.arg):
            sym = items.get(index)  # while the list still holds what the symbol stands for
            set_at(state, index, sym if sym is not None and sym.value is container[index] else None)

    return after


@handles("BUILD_TUPLE", "BUILD_LIST")
def _build_sequence(run, state, ins, shadow) -> After:
    count = ins.arg
    syms = shadow[len(shadow) - count :] if count else []
    if not any(syms):
        return None
    items = {i: s for i, s in enumerate(syms) if s is not None}

    return _container_built(run, state, items)


@handles("BUILD_CONST_KEY_MAP")
def _build_const_key_map(run, state, ins, shadow) -> After:
    count = ins.arg
    syms = shadow[len(shadow) - count - 1 : -1] if count else []
    if not any(syms):
        return None
    keys = cpython.stack_item(state.frame, 0)
    items = {key: s for key, s in zip(keys, syms) if s is not None}

    return _container_built(run, state, items)


@handles("BUILD_MAP")
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


@handles("MAP_ADD")
def _map_add(run, state, ins, shadow) -> After:
    """``{k: v.item() for k, v in losses.items()}``: a comprehension's dict remembers
    which of its values are symbolic, as a literal does (a logged metric is not
    pinned)."""
    if len(shadow) < 2 or (shadow[-1] is None and shadow[-2] is None):
        return None
    if shadow[-2] is not None:  # where the value goes: by value
        run.concretize(shadow[-2])
        shadow[-2] = None
    if shadow[-1] is not None:
        target = cpython.stack_item(state.frame, ins.arg + 1)
        run.container_syms.setdefault(id(target), {})[cpython.stack_item(state.frame, 1)] = shadow[
            -1
        ]
        run.keepalive.append(target)
        shadow[-1] = None
    return None


@handles("LIST_APPEND")
def _list_append(run, state, ins, shadow) -> After:
    """``[v.item() for v in losses]``: the comprehension's list remembers its symbolic
    items."""
    if not shadow or shadow[-1] is None:
        return None
    target = cpython.stack_item(state.frame, ins.arg)
    run.container_syms.setdefault(id(target), {})[len(target)] = shadow[-1]
    run.keepalive.append(target)
    shadow[-1] = None
    return None
