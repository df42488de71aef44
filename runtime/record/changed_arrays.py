"""Numpy arrays from outside that the call changed where the monitor could not see.

numpy is opaque to the monitor: ``img -= MEAN``, ``np.add(hist, 1, out=hist)``,
``hist.fill(0)``, ``np.copyto(a, b)`` change an array the program did not make,
and no store is recorded for them.  A replay would leave the array as it was (the
guard checks the contents the call found, so a call that finds the same contents
again replayed without the change).  An array whose contents differ at the end
of the run from those it had when the run first met it (``run.entry_arrays``) is
therefore refused, unless a graph wrote the change itself: an in-place update of
a tensor over the array's bytes (``torch.from_numpy(TOTALS).add_(x)``), which the
mock writes back.
"""

from __future__ import annotations

from typing import Any

import torch

from fullgraph.runtime.capture.origins import CalloutOrigin, ExternalOrigin
from fullgraph.runtime.record.guard_helpers import memory_extent, overlaps_array, same_array
from fullgraph.runtime.record.mock_support import leaves


def unseen_change(run: Any, values: dict) -> str | None:
    """The path of an array the call changed unseen, or None."""
    written = _written_tensors(run, values)
    for source, value in run.reads.items():
        saved = run.entry_arrays.get(id(value))
        if saved is None or same_array(value, saved):
            continue
        if not any(overlaps_array(memory_extent(t), value) for t in written):
            return source.expr()
    return None


def _written_tensors(run: Any, values: dict) -> list[torch.Tensor]:
    """The tensors the graphs update in place and the mock writes back."""
    found = []
    for segment in run.tape.segments:
        for origin, _ in segment.writebacks:
            if isinstance(origin, ExternalOrigin):
                tensor = values.get(origin.source)
            elif isinstance(origin, CalloutOrigin):  # a leaf of the callout's result
                tensor = leaves(run.tape.callouts[origin.index].result)[origin.path[0]]
            else:
                continue
            if isinstance(tensor, torch.Tensor):
                found.append(tensor)
    return found
