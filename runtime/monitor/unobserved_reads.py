"""What library code the monitor does not step into reads of the values it is given.

C methods and standard-library functions (``L.copy()``, ``copy.deepcopy(cfg)``,
``statistics.mean(xs)``, ``",".join(names)``, ``itertools.chain(xs)``) run
unobserved: their result is taken as it is, so the guard must check all of
what they read.  Every container from outside among the receiver and the
arguments is read whole (nested lists and dicts too), so a replay whose
containers changed misses; ``vars(obj)`` is ``obj.__dict__`` itself and keeps
that source, so what the program reads of it is guarded item by item.
"""

from __future__ import annotations

import array
import collections
import collections.abc
import os
from collections.abc import Callable, Hashable
from typing import Any

from fullgraph.runtime.monitor import type_checks
from fullgraph.runtime.monitor.iteration import MODULE_DICTS, MODULE_SEQUENCES, SNAPSHOT_ITERABLES
from fullgraph.runtime.monitor.user_code import is_user_code
from fullgraph.runtime.sources import AttrSource, ContainsSource, ItemSource

# Builtins that iterate an argument (``isinstance(it, ...)``, ``id(it)`` do not), and
# what they iterate that the guard reads whole: a set in its order, an iterator
# from outside (which refuses the record: a replay would not advance it).
CONSUMING_BUILTINS = frozenset(
    [sum, min, max, sorted, list, tuple, set, frozenset, dict, any, all, next, map, filter]
)
ITERATED_WHOLE = (*SNAPSHOT_ITERABLES, collections.abc.Iterator, type(os.environ))
# Mutable containers whose items any library call may read (``a.issubset(b)``,
# ``q.count(1.0)``, ``deque(q)``, ``bytes(buf)``): read whole whatever the call.
MUTABLE_SNAPSHOTS = (
    set,
    collections.deque,
    bytearray,
    array.array,
    type({}.keys()),
    type({}.values()),
    type({}.items()),
    collections.UserDict,
    collections.UserList,
)
# Pure builtins that read only what their arguments are, not what they hold.
_READ_NOTHING = (callable, type, id)


def read_by_call(
    run: Any, fn: Any, receiver: Any, args: tuple, kwargs: dict, result
) -> Callable | None:
    """A pure library call: guard what it reads; may return an after-phase."""
    if fn is vars and len(args) == 1 and run.source_of(args[0]) is not None:
        # ``vars(args)["lr"]``: the object's own ``__dict__``, read like any dict of it.
        owner_source = run.source_of(args[0])
        return lambda: run.register(result(), AttrSource(owner_source, "__dict__"))
    if fn is isinstance or fn is issubclass:  # a metaclass may decide (an ABC's registry)
        return type_checks.guard(run, fn, args, result)
    if any(fn is reads_nothing for reads_nothing in _READ_NOTHING):
        return None
    _read_module_dict_key(run, fn, receiver, args)
    hashable = isinstance(fn, Hashable)  # a torch Transform object is not
    for value in (receiver, *args, *kwargs.values()):
        if isinstance(value, (list, tuple, dict)):
            run.read_nested(value)
        elif id(value) in run.iterators:
            # ``sum(d.values())``, ``list(reversed(xs))``, ``dict(zip(keys, xs))``: the
            # view or iterator reads all of what it walks
            read_walked(run, run.iterators[id(value)])
        # (torch's Python reads a module sequence's length: a slice, ``__iter__`` from C)
        elif isinstance(value, (*MUTABLE_SNAPSHOTS, *MODULE_SEQUENCES)) or (
            hashable and fn in CONSUMING_BUILTINS and isinstance(value, ITERATED_WHOLE)
        ):
            run.read_whole(value)
    return None


def _read_module_dict_key(run: Any, fn: Any, receiver: Any, args: tuple) -> None:
    """``pd.get("bias")``, ``pd.setdefault("gain", 1.5)`` on a ParameterDict or
    ModuleDict from outside: torch's Python tests the key unobserved; the guard
    tests it too (an entry added between calls is another call)."""
    if receiver is None and args and isinstance(args[0], MODULE_DICTS):
        receiver, args = args[0], args[1:]  # after LOAD_METHOD: the plain function
    name = getattr(fn, "__name__", "")
    if not isinstance(receiver, MODULE_DICTS) or name not in ("get", "setdefault") or not args:
        return
    source = run.source_of(receiver)
    key = args[0]
    if source is None or not isinstance(key, str):
        return
    present = key in receiver
    run.read(ContainsSource(source, key), present, symbolic=False)
    if present:  # and what it holds there
        run.read(ItemSource(source, key), receiver[key], symbolic=False)
    elif name == "setdefault":
        run.refuse(f"{source.expr()}.setdefault inserts {key!r} in torch's Python, unobserved")


def read_walked(run: Any, state: Any, depth: int = 0) -> None:
    """Everything an iterator the run follows walks (the containers inside a zip too)."""
    if state is None or depth > 4:
        return
    if state.inner is not None:  # zip, enumerate: the iterators they combine
        for inner in state.inner:
            read_walked(run, inner, depth + 1)
    elif isinstance(state.iterable, (list, tuple, dict)):
        run.read_nested(state.iterable)


def read_by_constructor(run: Any, cls: type, args: tuple, kwargs: dict) -> None:
    """An object of a class whose ``__init__`` the monitor does not step into
    (``itertools.chain(xs)``, ``array.array("f", xs)``): it holds what it was given."""
    init = getattr(getattr(cls, "__init__", None), "__code__", None)
    if init is not None and is_user_code(init):
        return  # stepped into: its reads are guarded as they happen
    for value in (*args, *kwargs.values()):
        if isinstance(value, (list, tuple, dict)):
            run.read_nested(value)
        elif id(value) in run.iterators:
            # ``starmap(mul, zip(W, xs))``, ``islice(d.values(), 1)``: what it walks
            read_walked(run, run.iterators[id(value)])
        elif isinstance(value, (*ITERATED_WHOLE, *MODULE_SEQUENCES)):
            run.read_whole(value)  # ``deque(q)``, ``islice(q, 3)``, ``chain(a_set, xs)``
