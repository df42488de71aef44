"""Where a followed size meets code that reads its number natively.

A :class:`~fullgraph.runtime.symbolic.sizes.SizeInt` builds expressions only
through its own methods.  Native code may read the int's value without calling
any: a callee the monitor does not step into (``range(s)``,
``random.randint(0, s)``, ``torch.sym_max``), an instruction whose left operand
is not an int (``0.5 * s``, ``20.0 < s``), indexing a Python sequence.  These
pin the size (its exact value is guarded) or hand the callee plain ints.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from fullgraph.runtime.symbolic.sizes import SizeInt, holds_size

if TYPE_CHECKING:
    from fullgraph.runtime.symbolic.shapes import ShapeTracker


def _plain_argument(value: Any) -> Any:
    if isinstance(value, SizeInt):
        return value.plain
    if type(value) is tuple and any(isinstance(item, (SizeInt, tuple)) for item in value):
        return tuple(_plain_argument(item) for item in value)
    return value  # a list or dict is passed as itself: the callee may change it


def has_size_argument(args: tuple, kwargs: dict) -> bool:
    return any(_plain_argument(value) is not value for value in (*args, *kwargs.values()))


def with_plain_sizes(fn: Any) -> Any:
    """``fn`` called with its size arguments as the plain ints eager gives it (top level
    and inside tuples): code the monitor does not step into would otherwise see an int
    subclass (``functools.lru_cache`` keys one apart from the int, C code checks the
    exact type).  The monitor still sees the sizes, in the arguments it recorded."""

    if getattr(fn, "__qualname__", "").startswith("SizeInt.") and not hasattr(fn, "__self__"):
        # ``n.__index__()`` after LOAD_METHOD: SizeInt's own method with ``n`` first; the
        # plain int it gets here is called with int's (the run pinned ``n`` already).
        fn = getattr(int, fn.__name__, fn)

    def call(*args, **kwargs):
        return fn(*map(_plain_argument, args), **{k: _plain_argument(v) for k, v in kwargs.items()})

    return call


# Callees that keep a size's identity or use it only through its own methods.
_TRANSPARENT_BUILTINS = (isinstance, type, id, len, print, tuple, list, max, min, sum, getattr)
_TRANSPARENT_METHODS = frozenset(
    ["append", "extend", "copy", "count", "index", "get", "setdefault", "update", "add", "format"]
)


def keeps_sizes(fn: Any, args: tuple = (), kwargs: dict | None = None) -> bool:
    """Whether a callee the monitor doesn't step into may receive sizes as they are:
    torch (which records them into the graph) and builtins that only pass them on.
    Any other native code may read an int's value without calling a method of it
    (``range(s)``, ``random.randint(0, s)``), so its size arguments are pinned, as are
    those ``max``, ``min`` and ``sum`` compare or add with a float or a bool in C
    (``max(n, 6.5)``, ``sum(x.shape, 0.5)``, ``min(n - 5, False)``)."""
    if any(fn is builtin for builtin in (max, min, sum)):
        return not _foreign_operand((*args, *(kwargs or {}).values()))
    if any(fn is builtin for builtin in _TRANSPARENT_BUILTINS):
        return True
    receiver = getattr(fn, "__self__", None)
    objclass = getattr(fn, "__objclass__", None)  # an unbound method such as Tensor.view
    if isinstance(receiver, torch.Tensor) or (
        isinstance(objclass, type) and issubclass(objclass, torch._C.TensorBase)
    ):
        return True
    if (
        isinstance(receiver, (list, dict, set, str))
        and getattr(fn, "__name__", "") in _TRANSPARENT_METHODS
    ):
        return True
    module = getattr(fn, "__module__", None) or getattr(type(receiver), "__module__", None) or ""
    # ``torch.sym_max(a, b)`` and its kin compute with plain ints in Python.
    return module.startswith("torch") and not getattr(fn, "__name__", "").startswith("sym_")


# The instructions that may read an int's value natively (see check_instruction).
NATIVE_READS = frozenset(
    [
        "BINARY_OP",
        "COMPARE_OP",
        "CONTAINS_OP",
        "BINARY_SUBSCR",
        "STORE_SUBSCR",
        "DELETE_SUBSCR",
        "BINARY_SLICE",
        "STORE_SLICE",
    ]
)


def check_instruction(tracker: ShapeTracker, opname: str, top: Callable[[int], Any]) -> None:
    """Pin the sizes an instruction reads natively: indexing a Python sequence with a
    size, repeating a sequence by one, %-formatting one into a string, and arithmetic
    or a comparison whose left operand is not an int (``0.5 * n``, ``20.0 < n``,
    ``True + n``, ``Mode.WIDE * n``): the left operand's own method runs first and
    reads the number natively; SizeInt's reflected one is asked only by an int."""
    if opname == "CONTAINS_OP":  # ``n in [4.0, 6.0]``: float.__eq__ reads the size natively
        item, container = top(1), top(0)
        plain = isinstance(container, (list, tuple, set, frozenset, dict))
        if plain and holds_size(item) and _foreign_operand((tuple(container),)):
            tracker.concretize_all(item)
        return
    if opname in ("BINARY_OP", "COMPARE_OP"):
        # A sequence repeated by a size is caught by SizeInt's own __mul__/__rmul__.
        left, right = top(1), top(0)
        if _foreign_number(left) and holds_size(right):
            tracker.concretize_all(right)
        return
    if opname in ("BINARY_SLICE", "STORE_SLICE"):
        # 3.12+: container[start:stop] without a slice object, [container, start, stop]
        container, bounds = top(2), (top(1), top(0))
        if not isinstance(container, torch.Tensor) and holds_size(bounds):
            tracker.concretize_all(bounds)
        return
    if opname not in ("BINARY_SUBSCR", "STORE_SUBSCR", "DELETE_SUBSCR"):
        return
    container, key = top(1), top(0)
    if not isinstance(container, torch.Tensor) and holds_size(key):
        tracker.concretize_all(key)


def _foreign_number(value: Any) -> bool:
    """A left operand whose own operator method would take a size as a plain int: a
    number other than an exact int (whose subclass SizeInt is asked first), a numpy
    value, a string (``"%d" % s``).  Tensors and tuples (``shape[:1] + (s,)``) keep it."""
    if type(value) is int or isinstance(value, SizeInt):
        return False
    return isinstance(value, (numbers.Number, str, bytes, bytearray)) or type(
        value
    ).__module__.startswith("numpy")


def _foreign_operand(values: tuple) -> bool:
    """A number other than an int among ``values`` or the items of a list or tuple."""
    for value in values:
        items = value if isinstance(value, (list, tuple)) else (value,)
        if any(_foreign_number(item) and not isinstance(item, str) for item in items):
            return True
    return False


def follows_len(value: Any) -> bool:
    """``len(x)`` of a tensor whose first size may be followed as a symbol."""
    return isinstance(value, torch.Tensor) and value.dim() > 0


def plain_type(*args):
    """``type(n)`` of a followed size is ``int``, as eager's (``type(n) is int``)."""
    if len(args) == 1 and isinstance(args[0], SizeInt):
        return int
    return type(*args)


def tensor_len(tensor: torch.Tensor) -> int:
    """``len(tensor)`` as the size read it is (a SizeInt while sizes are followed)."""
    return tensor.size(0)
