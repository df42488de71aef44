"""Functions the generated guards call for checks that don't fit one expression.

They are plain module-level functions, so a guard printed by the user (and the
standalone wrapper, which imports them by name) reads as ordinary Python.
"""

from __future__ import annotations

import torch


def storages_apart(tensors: tuple, updated: tuple) -> bool:
    """Whether each tensor at a position in ``updated`` shares memory with no other one.

    A record whose graph updates an input in place (the mock copies the result
    back) computed every other input from its value before the update: that is
    the program's own answer only if no other input lies in the same memory.  The
    bytes each tensor's elements span are compared, not its storage object: two
    windows ``torch.from_numpy(buf[:4])`` and ``torch.from_numpy(buf[1:5])`` are two
    storages over the same bytes, and ``cache[0]`` and ``cache[1]`` of one buffer
    one storage with bytes apart.  Among the others may be numpy arrays the
    function reads (``x.numpy()`` handed in beside ``x``), compared the same way.
    """
    extents = [
        memory_extent(value) if isinstance(value, torch.Tensor) else _byte_bounds(value)
        for value in tensors
    ]
    for position in updated:
        own = extents[position]
        if own is None:
            return False
        start, end = own
        for other, extent in enumerate(extents):
            if other == position:
                continue
            if extent is None or (extent[0] < end and start < extent[1]):
                return False
    return True


def memory_extent(tensor: torch.Tensor) -> tuple[int, int] | None:
    """The bytes a tensor's elements lie within, from its first element to past its
    last (a view's own, not its whole storage's); None where it has no plain memory."""
    try:
        start = tensor.data_ptr()
    except (RuntimeError, NotImplementedError):  # sparse, nested, a tensor subclass
        return None
    if tensor.numel() == 0:
        return start, start
    span = sum((size - 1) * stride for size, stride in zip(tensor.shape, tensor.stride()))
    return start, start + (span + 1) * tensor.element_size()


def overlaps_array(extent: tuple[int, int] | None, array) -> bool:
    """Whether a tensor's bytes (``memory_extent``) meet a numpy array's (None: may)."""
    if extent is None:
        return True
    low, high = _byte_bounds(array)
    return extent[0] < high and low < extent[1]


def _byte_bounds(array) -> tuple[int, int]:
    from numpy.lib import array_utils

    return array_utils.byte_bounds(array)


def same_array(value, saved) -> bool:
    """Whether ``value`` is a numpy array with the type, shape, dtype and contents of
    ``saved`` (a copy the run's array was taken as): an array from outside is read
    by numpy code and operators the monitor does not see into, and changed in place
    (``table[0] = 9``) it is the same object with other contents."""
    import numpy

    return (
        type(value) is type(saved)
        and value.shape == saved.shape
        and value.dtype == saved.dtype
        and bool(numpy.array_equal(value, saved, equal_nan=saved.dtype.kind in "fc"))
    )
