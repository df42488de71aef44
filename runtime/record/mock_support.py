"""What a generated mock calls at run time: the miss marker, rebuilding the
program's objects, writing in-place updates back, and the random generator's state.

A mock made in this process and one written into a generated wrapper module
(``runtime/wrapper/template.py``) both call these, by the names in ``HELPERS``.
Nothing here generates code.
"""

from __future__ import annotations

import torch

from fullgraph.runtime.torch_internals import tree_flatten


class Missed:
    """A replay that did not apply: the guard failed, or a mid-guard did.

    The results of the callouts the replay already made reach the caller through
    the ``made`` dict it passed to the mock, not through this object.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISS"


MISS = Missed()


def make_dataclass_instance(cls, init: dict, others: dict):
    """Rebuild a dataclass (including ``ModelOutput``-style ones) from field values."""
    obj = cls(**init)
    for name, value in others.items():
        object.__setattr__(obj, name, value)
    return obj


def make_plain_object(cls, state: dict):
    """Rebuild a plain Python object created by the program, without calling __init__."""
    obj = cls.__new__(cls)
    for name, value in state.items():
        object.__setattr__(obj, name, value)
    return obj


def write_back(target: torch.Tensor, value: torch.Tensor) -> None:
    """Copy a graph's in-place update of an input back into the input.

    A leaf that requires grad (a parameter updated by ``p.data = ...`` or under
    ``no_grad``) is written without autograd, as the program's update was.
    """
    if target.requires_grad and target.is_leaf:
        with torch.no_grad():
            target.copy_(value)
    else:
        target.copy_(value)


def leaves(value):
    """The leaves of a callout's result, in the order the record numbered them."""
    return tree_flatten(value)[0]


def rng_state() -> tuple:
    """torch's generator states (CPU, and each CUDA device once CUDA is in use)."""
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    return torch.get_rng_state(), cuda


def restore_rng(state: tuple) -> Missed:
    """Put back the generator states ``rng_state`` took; the mock then returns MISS."""
    cpu, cuda = state
    torch.set_rng_state(cpu)
    if cuda is not None:
        torch.cuda.set_rng_state_all(cuda)
    return MISS


# The names the generated mock calls these by (its namespace binds them; a generated
# wrapper module defines them from this module).
HELPERS = {
    "MISS": MISS,
    "Missed": Missed,
    "write_back": write_back,
    "make_dataclass_instance": make_dataclass_instance,
    "make_plain_object": make_plain_object,
    "leaves": leaves,
    "rng_state": rng_state,
    "restore_rng": restore_rng,
}
