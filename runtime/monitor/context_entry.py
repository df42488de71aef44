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
import types
import warnings
from typing import Any

from fullgraph.runtime.monitor.user_code import is_user_code

# Library ``__enter__`` methods with no effect of their own (they return the manager,
# or run the program's generator, which the monitor steps into).
_TRANSPARENT = frozenset(
    {
        contextlib.AbstractContextManager.__enter__,
        contextlib.nullcontext.__enter__,
        contextlib.suppress.__enter__,
        contextlib._GeneratorContextManager.__enter__,
        warnings.catch_warnings.__enter__,  # its block is replayed whole (warnings_blocks)
    }
)


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
    enter = getattr(type(manager), "__enter__", None)
    if enter is None or enter in _TRANSPARENT:
        return None
    if isinstance(enter, types.FunctionType) and is_user_code(enter.__code__):
        return None  # the program's own: stepped into
    owner = getattr(enter, "__objclass__", None) or type(manager)
    module = getattr(enter, "__module__", None) or getattr(owner, "__module__", "") or ""
    if module.split(".")[0] == "torch" or type(manager).__module__.split(".")[0] == "torch":
        return None  # torch's managers: the state they set is read back (or refused there)
    name = f"{type(manager).__module__}.{type(manager).__qualname__}"
    return (
        f"`with` a {name}: its __enter__ runs in library code the monitor does not see, "
        "so a replay would leave the block without having entered it"
    )
