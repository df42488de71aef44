"""Functions the generated guards call for checks that don't fit one expression.

They are plain module-level functions, so a guard printed by the user (and the
standalone wrapper, which imports them by name) reads as ordinary Python.
"""

from __future__ import annotations

import torch


def storage_key(tensor: torch.Tensor) -> int:
    """What identifies the memory a tensor lives in (views of one storage share it)."""
    return tensor.untyped_storage().data_ptr()


def storages_apart(tensors: tuple, updated: tuple) -> bool:
    """Whether each tensor at a position in ``updated`` shares memory with no other one.

    A record whose graph updates an input in place (the mock copies the result
    back) computed every other input from its value before the update: that is
    the program's own answer only if no other input is the same tensor or a
    view of the same memory.  Among the others may be numpy arrays the function
    reads (``x.numpy()`` handed in beside ``x``): their bytes must lie outside
    each updated tensor's storage.
    """
    counts: dict[int, int] = {}
    keys = []
    arrays = []
    for value in tensors:
        if not isinstance(value, torch.Tensor):
            arrays.append(_byte_bounds(value))
            continue
        key = storage_key(value)
        keys.append(key)
        counts[key] = counts.get(key, 0) + 1
    for position in updated:
        storage = tensors[position].untyped_storage()
        start, end = storage.data_ptr(), storage.data_ptr() + storage.nbytes()
        if counts[keys[position]] != 1 or any(lo < end and start < hi for lo, hi in arrays):
            return False
    return True


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
