"""Autograd history a tensor got where the capture could not see it.

The capture binds each tensor an op makes to that op's node, and the graph
computes it in the grad mode the op ran in.  A custom ``torch.autograd.Function``
that code the monitor does not step into applies (torch's own Python:
``torch.utils.checkpoint(..., use_reentrant=True)``'s ``CheckpointFunction``,
``nn.CrossMapLRN2d``) runs its forward under ``no_grad``: the capture records
those ops grad-less, and ``apply`` then gives the *same* tensor objects the
Function's backward (``grad_fn``).  A graph replaying those nodes returns tensors
without that history: the program's backward would reach nothing behind them
(F170).  The node records whether its tensor required grad when it was bound;
a later use of the tensor whose history is now a custom Function's backward,
though its node does not give it, refuses the record by name (break FG209).
"""

from __future__ import annotations

import torch
import torch.fx

from fullgraph.runtime import breaks
from fullgraph.runtime.capture.origins import ExternalOrigin, NodeOrigin, Origin
from fullgraph.runtime.capture.segments import Unsupported

_KEY = "fg_requires_grad"


def note(tensor: torch.Tensor, node: torch.fx.Node) -> None:
    """At bind time: whether the tensor the node computes requires grad."""
    node.meta[_KEY] = tensor.requires_grad


def carry(placeholder: torch.fx.Node, origin: Origin) -> None:
    """A later segment's placeholder for an earlier node's tensor: the same history."""
    if isinstance(origin, NodeOrigin) and _KEY in origin.node.meta:
        placeholder.meta[_KEY] = origin.node.meta[_KEY]


def check(tensor: torch.Tensor, node: torch.fx.Node) -> torch.fx.Node:
    """``node`` for ``tensor``, or Unsupported when the tensor got autograd history the
    node's graph does not give it."""
    if node.meta.get(_KEY) is False and tensor.requires_grad and _from_function(tensor):
        raise Unsupported(breaks.CUSTOM_AUTOGRAD_FUNCTION, _detail(tensor))
    return node


def _from_function(tensor: torch.Tensor) -> bool:
    """Whether the tensor's history is a custom Function's backward.  An in-place op the
    capture recorded gives history too (``h[0] = w.sum()`` on ``h = zeros(3)``: CopySlices),
    and its graph gives it the same."""
    return isinstance(tensor.grad_fn, torch.autograd.function.BackwardCFunction)


def _detail(tensor: torch.Tensor) -> str:
    name = type(tensor.grad_fn).__name__
    if name == "CheckpointFunctionBackward":
        return (
            "torch.utils.checkpoint(..., use_reentrant=True) where the capture can't put it "
            "in the graph (its CheckpointFunction runs the function without grad and gives "
            "the outputs a backward no graph records); use_reentrant=False is captured"
        )
    return (
        f"a tensor got autograd history ({name}) from a custom autograd.Function that "
        "library code applied, which the graph would not give it"
    )


class Producers(dict):
    """``GraphTape.producer`` (tensor id -> Origin) that keeps each tensor's earlier
    origins too, with the number of callouts made when each was set.

    A store the mock makes before a callout (``w.grad = t`` before the next read of
    ``w.grad``) must name its tensor as it was then: the origin the tensor has at
    the end of the run may be a later callout's result (``w.grad`` read again),
    which the mock has not made yet at that point (F171)."""

    def __init__(self, callouts: list):
        super().__init__()
        self.callouts = callouts
        self.past: dict[int, list[tuple[int, Origin]]] = {}

    def __setitem__(self, key: int, origin: Origin) -> None:
        self.past.setdefault(key, []).append((len(self.callouts), origin))
        super().__setitem__(key, origin)

    def before(self, key: int, position: int) -> Origin | None:
        """The origin tensor ``key`` had when the callout at ``position`` was made (None:
        the tensor was first met after it)."""
        entries = self.past.get(key, ())
        earlier = [origin for count, origin in entries if count <= position]
        if earlier:
            return earlier[-1]
        if entries and isinstance(entries[0][1], ExternalOrigin):
            return entries[0][1]  # an outside tensor, first used later: the same then
        return None
