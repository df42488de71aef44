"""Torch calls that raised during a monitoring run, which the program may catch.

Whether a torch call raises can depend on values no guard checks: ``x[idx]``
with an index out of range, ``cholesky`` of a matrix that is not positive
definite, ``scatter`` with a bad index.  A record of the ``except`` path would
replay it for inputs that do not raise.  The call becomes a callout the mock makes
again, checking it raises the same (a mid-guard: where it does not, the replay
misses).  A call that changes its inputs can't be made again (where it does not
raise it would change them), nor one whose error a mid-guard can't compare: those
refuse the record.
"""

from __future__ import annotations

from typing import Any

from fullgraph.runtime import breaks
from fullgraph.runtime.monitor.callouts import raised_is_checkable
from fullgraph.runtime.record.mock_support import Raised

# ``x += y`` and the like: Tensor's in-place operator methods (``__iadd__``...).
_AUGMENTED = frozenset(
    f"i{op}"
    for op in ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "pow")
    + ("and", "or", "xor", "lshift", "rshift")
)


def raised(run: Any, func: Any, name: str, args: tuple, kwargs: dict, error: Exception) -> None:
    """``func(*args, **kwargs)`` (named ``name``) raised ``error`` in ``run``."""
    if run.tape.unsupported is not None:
        return
    if _changes_inputs(name, kwargs) or not raised_is_checkable(error):
        run.refuse(f"{name} raised, and whether it does depends on values no guard checks")
        return
    run.torch_callout(func, args, kwargs, Raised(error), breaks.TENSOR_VALUE_READ)


def _changes_inputs(name: str, kwargs: dict) -> bool:
    if name.startswith("__"):
        return name == "__setitem__" or name[2:-2] in _AUGMENTED
    return name.endswith("_") or "out" in kwargs
