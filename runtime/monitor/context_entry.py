"""``with cm:``: entering a context manager the monitor does not see.

The interpreter calls ``type(cm).__enter__`` itself (``BEFORE_WITH``), not
through a call instruction.  A Python ``__enter__`` of the program is stepped
into like any call, and torch's own managers (grad mode, autocast, devices)
change state the run reads back; but a library's or C ``__enter__``
(``threading.Lock``, ``Semaphore``, ``Condition``, ``numpy.errstate``,
``contextlib.chdir``) would never be made again by a replay, while the
``__exit__`` call that ends the block is a call like any other and is replayed: a
replay would release a lock it never took.  Such blocks are refused.

A torch function or dispatch mode of the program entered inside the call (an op
counter, a FLOP counter) would see the monitor's own tensor queries on top of
the program's operations: the run stops observing there, refused, and the call
finishes as plain Python.
"""

from __future__ import annotations

import contextlib
import inspect
import types
import warnings
from typing import Any

from fullgraph.runtime.monitor.user_code import is_torch_file, is_user_code

# Library ``__enter__`` methods with no effect of their own (they return the manager,
# or run the program's generator, which the monitor steps into).
_TRANSPARENT = frozenset(
    {
        contextlib.AbstractContextManager.__enter__,
        contextlib.nullcontext.__enter__,
        contextlib.suppress.__enter__,
        contextlib.closing.__enter__,
        contextlib.ExitStack.__enter__,  # what it enters is checked (``enter_context``)
        warnings.catch_warnings.__enter__,  # its block is replayed whole (warnings_blocks)
    }
)
_GENERATOR_ENTER = contextlib._GeneratorContextManager.__enter__
_ENTER_CONTEXT = contextlib.ExitStack.enter_context


def before_entering(run: Any, manager: Any) -> None:
    """``manager`` is about to be entered where the monitor does not see it (``with``,
    ``stack.enter_context``): refuse what a replay could not enter."""
    mode = program_mode(manager)
    if mode is not None:
        run.refuse(mode)
        run.stopped = run.paused = run.mode.paused = True  # nothing more of the call is observed
        return
    unseen = unseen_entry(manager)
    if unseen is not None:
        run.refuse(unseen)


def program_mode(manager: Any) -> str | None:
    """Why entering ``manager``, a torch mode, stops the run (None: not a mode)."""
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    if not isinstance(manager, (TorchFunctionMode, TorchDispatchMode)):
        return None
    return (
        f"`with` a {type(manager).__qualname__} (a torch mode) inside the function: the "
        "mode would see fullgraph's own queries, and a replay would not enter it"
    )


def unseen_entry(manager: Any) -> str | None:
    """Why entering ``manager`` can't be replayed (None: it can, or is followed)."""
    kind = type(manager)
    name = f"{kind.__module__}.{kind.__qualname__}"
    refused = _refused_base(kind)
    if refused is not None:  # ``class Anomaly(torch.autograd.detect_anomaly)``
        return f"`with` a {name}: {refused}"
    enter = getattr(kind, "__enter__", None)
    if enter is None or enter in _TRANSPARENT:
        return None
    if enter is _GENERATOR_ENTER:  # ``@contextmanager``: whose generator runs
        code = getattr(getattr(manager, "gen", None), "gi_code", None)
        if code is not None and (is_user_code(code) or is_torch_file(code.co_filename)):
            return None
        where = getattr(code, "co_qualname", getattr(code, "co_name", "?"))
        return (
            f"`with` {where}(...): a context manager of library code the monitor does not "
            "see, so a replay would leave the block without having entered it"
        )
    if isinstance(enter, types.FunctionType) and is_user_code(enter.__code__):
        return None  # the program's own: stepped into
    owner = getattr(enter, "__objclass__", None) or kind
    module = getattr(enter, "__module__", None) or getattr(owner, "__module__", "") or ""
    if module.split(".")[0] == "torch" or kind.__module__.split(".")[0] == "torch":
        return None  # torch's managers: the state they set is read back (or refused there)
    return (
        f"`with` a {name}: its __enter__ runs in library code the monitor does not see, "
        "so a replay would leave the block without having entered it"
    )


def builds_a_program_manager(target: Any) -> bool:
    """``self.ema_scope()``, ``ema.average_parameters()``: the wrapper
    ``@contextlib.contextmanager`` puts around a generator of the program only makes
    the manager (no code of the program runs until the ``with`` enters it, stepped
    into there), whatever objects it is handed."""
    wrapped = getattr(target, "__wrapped__", None)
    return (
        getattr(target, "__code__", None) is _MANAGER_HELPER
        and isinstance(wrapped, types.FunctionType)
        and bool(wrapped.__code__.co_flags & inspect.CO_GENERATOR)
        and is_user_code(wrapped.__code__)
    )


_MANAGER_HELPER = contextlib.contextmanager(lambda: iter(())).__code__


def entered_by_a_call(fn: Any, args: tuple) -> Any:
    """The manager ``stack.enter_context(cm)`` enters (None: another call)."""
    function = getattr(fn, "__func__", fn)
    if function is _ENTER_CONTEXT and args:
        return args[-1]
    return None


def _refused_base(kind: type) -> str | None:
    """Why a class this manager's class derives from is refused (``saved_tensors_hooks``,
    ``detect_anomaly``: refused where the program makes one, by name)."""
    from fullgraph.runtime.monitor.annotation_table import FUNCTIONS

    for klass in kind.__mro__:
        known = FUNCTIONS.get(f"{klass.__module__}.{klass.__qualname__}")
        if known is not None and known.refuses is not None:
            return known.refuses
    return None
