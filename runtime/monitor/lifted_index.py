"""A varying int indexing a tensor (``self.alphas_cumprod[t]``), lifted into the graph.

A diffusion sampler reads its noise schedule by timestep, a decoder its position
table by step: ``buf[t]`` with a number that changes every call.  Guarded by value,
that is a record per timestep.  Lifted, the graph takes ``t`` as an input and
selects with it (``buf[scalar.item()]``: still a view of ``buf``, as eager's); the
record holds while ``0 <= t < len(buf)`` (a negative or out-of-range index is
another call: eager wraps or raises), and the graph says so to its tracer
(``capture.nodes.index_checks``), which otherwise can't tell where the view
starts.

Only a plain tensor indexed by one int: a tuple index (``pe[:, t]``), a list or a
tensor subclass keep the number guarded by value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from fullgraph.runtime import cpython
from fullgraph.runtime.symbolic.scalars import Condition, Op

_PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter)


def register(run: Any, state: Any, shadow: list) -> Callable | None:
    """At ``BINARY_SUBSCR`` with a symbolic index: hand the index to the capture as a
    pending lift (an after-phase guards it by value if the graph did not take it), or
    None to leave the instruction to the generic handling."""
    if len(shadow) < 2 or shadow[-2] is not None or shadow[-1] is None:
        return None
    container, index = cpython.stack_item(state.frame, 1), cpython.stack_item(state.frame, 0)
    if type(container) not in _PLAIN_TENSORS or type(index) is not int or container.dim() == 0:
        return None
    length = int(container.shape[0])
    if not 0 <= index < length or id(index) in run.pending_lifts or run.speculating is not None:
        return None
    sym = shadow[-1]
    run.add_condition(Condition(Op(index >= 0, "({0} >= 0)", (sym,)), "truth", True, _WHY))
    run.add_condition(
        Condition(Op(index < length, f"({{0}} < {length})", (sym,)), "truth", True, _WHY)
    )
    run.pending_lifts[id(index)] = sym
    shadow[-1] = None  # taken here: not guarded by value as an operand
    key = id(index)
    return lambda: run.guard_untaken_lifts([key])


_WHY = "a tensor indexed by a varying int: the index is in range"
