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
    view of the same memory.
    """
    counts: dict[int, int] = {}
    keys = []
    for tensor in tensors:
        key = storage_key(tensor)
        keys.append(key)
        counts[key] = counts.get(key, 0) + 1
    return all(counts[keys[position]] == 1 for position in updated)


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
