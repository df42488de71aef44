"""Small pure helpers about the non-tensor values of a torch call on the tape.

Which values an output effect may show without a split (``is_plain``), how a
constant argument is written in graph code (``legacy_type``, ``plain_number``),
and the dtype and tensor a lifted Python number enters a graph as.
"""

from __future__ import annotations

import operator
from typing import Any

import torch
import torch.fx

from fullgraph.runtime.torch_internals import tree_flatten

_PLAIN_TYPES = (str, int, float, bool, complex, bytes, type(None), torch.dtype, torch.device)


def is_plain(value: Any) -> bool:
    """A value an output effect can show without reading any tensor or mutable object
    (a size, a string, a number, a warning category)."""
    return isinstance(value, _PLAIN_TYPES) or (
        isinstance(value, type) and issubclass(value, Warning)
    )


# ``dtype=int`` (``torch.tensor([-1], dtype=int)``, ``x.to(float)``): the dtype torch
# takes a Python type for, which graph code can write.
_PYTHON_TYPE_DTYPES = {
    int: torch.int64,
    float: torch.float64,
    bool: torch.bool,
    complex: torch.complex128,
}


def legacy_type(value: Any) -> Any:
    """``torch.HalfTensor`` as an argument (``x.type(torch.HalfTensor)``) is written as its
    name, which the same methods accept, and a Python type given as a dtype as that
    dtype: a class has no Python expression in graph code."""
    if type(value) is type and value in _PYTHON_TYPE_DTYPES:
        return _PYTHON_TYPE_DTYPES[value]
    if (
        isinstance(value, type)
        and value.__module__.startswith("torch")
        and (value.__name__.endswith("Tensor") and value is not torch.Tensor)
    ):
        return f"{value.__module__}.{value.__name__}"
    return value


def is_numpy_scalar(value: Any) -> bool:
    """``np.float64(2.0)``, ``np.int64(6)``: a numpy scalar (not a 0-d array)."""
    kind = type(value)
    return (
        kind.__module__ == "numpy"
        and kind.__name__ != "ndarray"
        and getattr(value, "shape", None) == ()
    )


def is_ndarray(value: Any) -> bool:
    """A numpy array (numpy is not imported unless the program did)."""
    kind = type(value)
    return kind.__name__ == "ndarray" and kind.__module__ == "numpy"


def views_tensor_memory(array: Any) -> bool:
    """A numpy array (or a view of one) made by ``Tensor.numpy()`` / ``np.asarray(t)``:
    it shares the tensor's memory, so later updates of either show through the other."""
    seen = 0
    while type(array).__module__ == "numpy" and seen < 64:
        array, seen = getattr(array, "base", None), seen + 1
    return isinstance(array, torch.Tensor)


def plain_number(value: Any) -> Any:
    """A number-like constant as the Python number torch reads it as: graph code writes
    constants by their repr, and ``np.int64(6)`` names a module it lacks, ``Perm.R|W``
    (an IntFlag) and ``<Width object at ...>`` (a class with ``__index__``) are no
    Python at all."""
    kind = type(value)
    if kind.__module__ == "numpy" and getattr(value, "shape", None) == ():
        # np.int64, np.float64 (scalars have the shape ()); torch reads an np.bool_ as
        # the float it converts to (``x * np.True_`` is ``x * 1.0``, not ``x * True``).
        return float(value) if kind.__name__ in ("bool", "bool_") else value.item()
    if kind in (int, float, bool) or value is None:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return int.__int__(value)  # an IntEnum, IntFlag, ``class Width(int)``
    if isinstance(value, float):
        return float.__float__(value)
    symbolic = (torch.SymInt, torch.SymFloat, torch.SymBool, torch.fx.Node)
    if hasattr(kind, "__index__") and not isinstance(value, (torch.Tensor, type, *symbolic)):
        return operator.index(value)  # what torch's argument parser takes from it
    return value


def lifted_dtype(value: Any) -> torch.dtype | None:
    """The dtype a lifted Python number enters a graph as (None: torch's default for it).
    A float keeps Python's float64: as a float32 tensor it would round ``0.1`` before a
    float64 tensor uses it."""
    return torch.float64 if isinstance(value, float) else None


def lifted_tensor(value: Any) -> torch.Tensor:
    """The 0-dim tensor a lifted Python number enters a graph as (at record time)."""
    return torch.tensor(value, dtype=lifted_dtype(value))


def holds_tensor(value: Any) -> bool:
    """Whether a (nested) structure holds a tensor."""
    return any(isinstance(leaf, torch.Tensor) for leaf in tree_flatten(value)[0])
