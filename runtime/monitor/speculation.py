"""Speculative runs: user code the monitor runs early, whose effects must not happen.

A custom ``torch.autograd.Function``'s backward runs, in eager, when the
program calls ``loss.backward()`` — maybe never.  To put it into the graph
the monitor runs it once during the monitoring run, on stand-in gradients
(``capture/custom_functions.py``).  That run is speculative: a ``print``, a
store into an object from before it, or any call the monitor would replay
would be an effect eager never made at that point.  While
``MonitorRun.speculating`` is set, the monitor therefore makes each such
instruction raise :class:`SpeculationBlocked` *instead* of having its effect
(it swaps the callee or the store's target on the interpreter's stack for a
:class:`Blocker`), and the capture falls back to running the Function as
eager does.  A store to a global or a closure cell, which has no target on
the stack to swap, is undone right after it happens.  Torch calls are checked before they run
(:func:`torch_effect`): ``backward()`` and an in-place update of a tensor
from before the run raise the same way.
"""

from __future__ import annotations

import types
import weakref
from typing import Any

import torch

from fullgraph.runtime import cpython
from fullgraph.runtime.monitor import annotation_table, autograd_calls
from fullgraph.runtime.monitor.user_code import is_user_code

# ``x op= v`` on these makes a new object (or is a torch op the capture sees first).
UPDATED_BY_VALUE = (torch.Tensor, int, float, complex, bool, str, bytes, tuple, frozenset)


class SpeculationBlocked(Exception):
    """An effect a speculative run tried to make (the run is abandoned)."""


class Blocker:
    """Stands in for a callee or a store target: any use raises SpeculationBlocked."""

    __slots__ = ("what",)

    def __init__(self, what: str):
        object.__setattr__(self, "what", what)

    def _blocked(self, *args: Any, **kwargs: Any):
        raise SpeculationBlocked(self.what)

    __call__ = __setattr__ = __delattr__ = __getitem__ = __setitem__ = __delitem__ = _blocked


def block(run: Any, frame: Any, depth: int, what: str) -> None:
    """Make the instruction about to run raise instead of acting on its stack item
    ``depth`` (the callee of a CALL, the owner of a store)."""
    blocker = Blocker(what)
    run.keepalive.append(blocker)
    # Noted now as well: user code may catch the exception and carry on.
    run.speculation_problem = run.speculation_problem or what
    cpython.replace_stack_item(frame, depth, blocker)


def changes_outside(
    run: Any, fn: Any, target: Any, values: tuple, mutated_owner: Any, annotation: Any
) -> bool:
    """Whether a call the monitor does not step into would change something a
    speculative run must leave alone: an annotated mutating call on an object it may
    not write, ``next()`` of an iterator from outside, or standard-library Python
    handed a container from outside (``Counter.update`` writes it from C)."""
    receiver, args = values[0], values[1:]
    if annotation.mutates and not allows_store(run, mutated_owner(receiver, args, annotation)):
        return True
    if fn is next and args and run.source_of(args[0]) is not None:
        return True
    library_python = isinstance(target, types.FunctionType) and not is_user_code(target.__code__)
    return library_python and any(
        isinstance(v, annotation_table.MUTABLE_BUILTINS) and run.source_of(v) is not None
        for v in values
    )


# What a path run may hand library code from outside: values the code cannot change.
_UNCHANGEABLE = (*UPDATED_BY_VALUE, type(None), type, torch.dtype, torch.device, types.ModuleType)
_TRUSTED_LIBRARIES = ("builtins", "torch")  # annotated call by call, or captured by the mode


def call_effect(run: Any, fn: Any, args: tuple, kwargs: dict) -> str | None:
    """Why calling ``fn`` would have an effect no other check sees (None: it would not).

    Any run: an object with a finalizer (``__del__``, ``weakref.finalize``, a weakref
    callback) runs it when dropped, and a replay makes no such object.  A speculative
    run, besides: library code outside builtins and torch handed a mutable object from
    outside (``arr.fill(v)`` on a numpy array is annotated pure with the rest of numpy).
    """
    if isinstance(fn, type) and any("__del__" in vars(klass) for klass in fn.__mro__[:-1]):
        return f"makes a {fn.__name__}, whose __del__ runs when it is dropped"
    if fn is weakref.finalize or ((fn is weakref.ref or fn is weakref.proxy) and len(args) > 1):
        return "registers a finalizer, which runs when its object is dropped"
    if run.speculating is None:
        return None
    target = getattr(fn, "__func__", fn)
    if isinstance(target, types.FunctionType) and is_user_code(target.__code__):
        return None  # stepped into: its own instructions are checked
    if isinstance(fn, type) or annotation_table.module_of(fn).startswith(_TRUSTED_LIBRARIES):
        return None
    receiver = getattr(fn, "__self__", None)
    for value in (receiver, *args, *kwargs.values()):
        if not isinstance(value, _UNCHANGEABLE) and run.source_of(value) is not None:
            name = annotation_table.qualified_name(fn)
            return f"hands a {type(value).__name__} from outside to {name}"
    return None


def inserts_missing_key(run: Any, container: Any, key: Any) -> bool:
    """``counts[k]`` on a ``defaultdict`` from outside without ``k`` inserts it, in C."""
    missing = getattr(type(container), "__missing__", None)
    if not isinstance(container, dict) or missing is None or run.source_of(container) is None:
        return False
    if isinstance(missing, types.FunctionType) and is_user_code(missing.__code__):
        return False  # stepped into: its stores are blocked one by one
    try:
        return key not in container
    except TypeError:  # unhashable: the subscript raises without inserting
        return False


def allows_store(run: Any, owner: Any) -> bool:
    """Outside a speculative run every store happens; inside one only stores into the
    object the run was given to write (the Function's ``ctx``)."""
    return run.speculating is None or owner is run.speculating


def undo_global_store(run: Any, globals_dict: dict, name: str):
    """The pending action that puts a global back as it was before a speculative store."""
    missing = object()
    before = globals_dict.get(name, missing)

    def undo() -> None:
        if before is missing:
            globals_dict.pop(name, None)
        else:
            globals_dict[name] = before
        run.speculation_problem = run.speculation_problem or f"stores the global {name!r}"

    return undo


def undo_cell_store(run: Any, cell: Any):
    """The pending action that puts a closure cell back as it was."""
    try:
        before, empty = cell.cell_contents, False
    except ValueError:
        before, empty = None, True

    def undo() -> None:
        if empty:
            try:
                del cell.cell_contents
            except ValueError:
                pass
        else:
            cell.cell_contents = before
        run.speculation_problem = run.speculation_problem or "stores into a closure cell"

    return undo


# In-place operators that are not named with a trailing underscore.
_INPLACE_DUNDERS = frozenset(
    f"__i{op}__"
    for op in (
        "add",
        "sub",
        "mul",
        "truediv",
        "floordiv",
        "mod",
        "pow",
        "and",
        "or",
        "xor",
        "lshift",
        "rshift",
        "matmul",
    )
) | {"__setitem__"}


def torch_effect(
    func: Any, name: str, args: tuple, kwargs: dict, made_here: Any, effects: frozenset
) -> str | None:
    """Why torch call ``name`` would be an effect of the speculative run (None: it is
    not): autograd calls, ``effects`` (hooks, ``retain_grad``: in place too early), and
    in-place updates of a tensor ``made_here(t)`` says is older."""
    if autograd_calls.is_autograd_torch_function(func) or name in effects:
        return f"calls {name}"
    if name == "__set__":  # ``p.data = v``, ``t.grad = g``
        return "sets an attribute of a tensor"
    if any(isinstance(v, torch.Generator) for v in (*args, *kwargs.values())):
        return "draws from a torch.Generator"
    targets = []
    if isinstance(kwargs.get("out"), torch.Tensor):
        targets.append(kwargs["out"])
    inplace = name in _INPLACE_DUNDERS or (name.endswith("_") and not name.startswith("_"))
    if inplace and args and isinstance(args[0], torch.Tensor):
        targets.append(args[0])
    for tensor in targets:
        if not made_here(tensor):
            return f"updates a tensor from before it in place ({name})"
    return None
