"""A replayed ``warnings.warn`` carries this call's message.

The replay issues the warning at the user's line (``warn_at``), so the call's
arguments move to other positions; a message built from a value read from the
graph (``f"loss {v}"``) has to move with its expression, not stay the
monitored call's text.
"""

from __future__ import annotations

import warnings

import torch

import fullgraph.runtime as fr


def warns_with_the_loss(x):
    loss = x.sum().item()
    warnings.warn(f"loss {loss}")
    warnings.warn(f"scaled {loss * 2}", category=RuntimeWarning)
    return x * 2


def test_the_message_of_a_replayed_warning_is_this_calls():
    compiled = fr.compile(warns_with_the_loss, backend="eager")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(4):
            compiled(torch.full((2,), float(i)))
    messages = [(str(w.message), w.category, w.lineno) for w in caught]
    line = warns_with_the_loss.__code__.co_firstlineno
    expected = []
    for i in range(4):
        loss = 2.0 * i
        expected += [(f"loss {loss}", UserWarning, line + 2)]
        expected += [(f"scaled {loss * 2}", RuntimeWarning, line + 3)]
    assert messages == expected
    assert compiled.stats.hits == 3
