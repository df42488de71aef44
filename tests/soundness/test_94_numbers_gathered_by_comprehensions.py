"""Class 94: numbers gathered by a comprehension (found 2026-12-07).

F355 (preprocessing probe; cost): ``logs = {k: v.item() for k, v in
losses.items()}`` and ``[v.item() for v in losses.values()]``, the way training
steps log their losses: the comprehension's ``MAP_ADD`` / ``LIST_APPEND`` took each
number by value, a record per call (five calls, no replay).  The dict or list a
comprehension builds remembers its symbolic items now, as a literal does.
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Case, backends, calls, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="comprehensions94")

LOGGED_LOSSES = """
import torch

def f(x, y):
    losses = {"mse": (x - y).pow(2).mean(), "l1": (x - y).abs().mean()}
    logs = {name: value.item() for name, value in losses.items()}
    values = [value.item() for value in losses.values()]
    return sum(losses.values()), logs, values
"""


def _pair(env):
    return torch.randn(4), torch.randn(4)


@backends()
def test_losses_logged_through_comprehensions(backend):
    run_case(Case("logged", prog(LOGGED_LOSSES), calls(5, _pair), min_hits=3), backend)
