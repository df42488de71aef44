"""Numbers that vary, passed through ``*args`` / ``**kwargs`` (a decorator's wrapper).

``def timed(fn): def wrapper(*args, **kwargs): return fn(*args, **kwargs)``
around a forward that takes a temperature: the wrapper's ``args`` tuple holds the
very number the caller passed, and ``fn(*args, **kwargs)`` hands it on, so its
symbol goes with it (``passed_syms`` binds named parameters only).  The tuple
and dict the interpreter packs remember which items are symbolic
(``run.container_syms``, as a literal the program built does), and a call that
unpacks them hands those items' symbols to the callee; a callee that does not
take one guards it by value, as for any call.
"""

from __future__ import annotations

import inspect
import types
from typing import Any

from fullgraph.runtime import cpython
from fullgraph.runtime.monitor import taint_builds
from fullgraph.runtime.monitor.taint_stack import After, handles


def bind_packed(run: Any, frame: types.FrameType, handed: list) -> set[int]:
    """Give ``frame``'s ``*args`` tuple and ``**kwargs`` dict the symbols of the items
    the caller handed (by identity, one object each); the ids of the symbols taken."""
    code = frame.f_code
    names = code.co_varnames[code.co_argcount + code.co_kwonlyargcount :]
    taken: set[int] = set()
    position = 0
    for flag, kind in ((inspect.CO_VARARGS, tuple), (inspect.CO_VARKEYWORDS, dict)):
        if not code.co_flags & flag:
            continue
        name = names[position]
        position += 1
        if name in code.co_cellvars:
            continue  # a closure reads it: guarded by value
        packed = frame.f_locals.get(name)
        if type(packed) is not kind or not packed:
            continue
        items = packed.items() if kind is dict else enumerate(packed)
        syms = {}
        for key, value in items:
            same = [sym for obj, sym in handed if obj is value]
            if len(same) == 1 and same[0] is not None:
                syms[key] = same[0]
                taken.add(id(same[0]))
        if syms:
            run.container_syms[id(packed)] = syms
            run.keepalive.append(packed)
    return taken


def unpacked_operands(run: Any, state: Any, ins: Any) -> tuple[list, list] | None:
    """``fn(*args, **kwargs)`` of containers with symbolic items: (symbols, objects) of
    the operands the callee gets, for ``passed_syms`` to bind; None when none is."""
    _, args_depth, kwargs_depth = cpython.call_ex_layout(ins)
    args = cpython.stack_item(state.frame, args_depth)
    kwargs = cpython.stack_item(state.frame, kwargs_depth) if kwargs_depth is not None else {}
    syms: list = []
    values: list = []
    for container, keys in ((args, None), (kwargs, ())):
        if not isinstance(container, (tuple, list, dict)):
            continue
        known = run.container_syms.get(id(container), {})
        pairs = container.items() if isinstance(container, dict) else enumerate(container)
        for key, value in pairs:
            syms.append(known.get(key))
            values.append(value)
            taint_builds.concretize_items(run, value)  # nested containers: read by the call
    if not any(sym is not None for sym in syms):
        return None
    return syms, values


@handles("DICT_MERGE", "DICT_UPDATE")
def _merge(run, state, ins, shadow) -> After:
    """``f(x, **kw)`` merges ``kw`` into the dict the call gets: its symbolic items
    keep their symbols there (other instructions reading ``kw`` guard them)."""
    source = cpython.stack_item(state.frame, 0)
    target = cpython.stack_item(state.frame, ins.arg)
    if shadow and shadow[-1] is not None:
        run.concretize(shadow[-1])
    if shadow:
        shadow[-1] = None
    items = run.container_syms.get(id(source))
    if not items or not isinstance(source, dict) or not isinstance(target, dict):
        taint_builds.concretize_items(run, source)
        return None

    def after() -> None:
        merged = run.container_syms.setdefault(id(target), {})
        merged.update(items)
        run.keepalive.append(target)

    return after
