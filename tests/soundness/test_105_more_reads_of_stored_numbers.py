"""Class 105: more reads of numbers the call stored (found 2026-12-07).

The nineteenth session's second adversarial probe of its own fixes found reads of a
stored number that F373's pinning did not cover (all wrong before this session too):

- F381: ``v in window`` / ``v not in window`` after ``window[1] = loss``; the value
  ``D.pop("a")`` or ``W.pop(1)`` takes after the call stored it; ``C.last = v`` read
  through an instance (``inst.last``); ``dq[1] = v; sum(dq)`` on a ``deque`` and
  ``arr[1] = v; arr[1]`` on an ``array.array`` (which hands back a new float, so the
  stored symbol's identity check failed and nothing was guarded); ``window[-1] = v``
  then ``sum(window)``, ``w[1] = v`` then ``w[-1]`` (the slot under its two indexes
  was two keys).  Each reads the stored number where no symbol follows it: pinned
  now, and a list's slot is keyed from the front (its length guarded).
- F382: ``model.train(acc > 0.5)`` with a mode computed from data: the followed
  switch took the mode as known, so the graph after it kept the first call's mode.
  The mode's symbol is pinned.
"""

from __future__ import annotations

from functools import partial

import pytest
import torch
from harness import Call, Case, backends, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="reads105")


def _scaled(scale):
    return lambda env: (torch.ones(3) * scale,)


STORED = """
import array
import collections
import torch

WINDOW = [0.0, 0.0]
D = {"a": 0.0}
W = [0.0, 0.0]
DQ = collections.deque([0.0, 0.0])
ARR = array.array("d", [0.0, 0.0])

class Config:
    last = 0.0

config = Config()

def f(x):
    v = x.sum().item()
    BODY
"""

BODIES = {
    "in": "WINDOW[1] = v\n    return x * (6.0 in WINDOW)",
    "dict_pop": "D['a'] = v\n    r = D.pop('a')\n    D['a'] = 0.0\n    return x * r",
    "list_pop": "W[1] = v\n    r = W.pop(1)\n    W.append(0.0)\n    return x * r",
    "class_attribute": "Config.last = v\n    return x * config.last",
    "deque": "DQ[1] = v\n    return x * sum(DQ)",
    "array": "ARR[1] = v\n    return x * ARR[1]",
    "negative_store": "WINDOW[-1] = v\n    return x * sum(WINDOW)",
    "negative_read": "W[1] = v\n    return x * W[-1]",
}


@backends()
@pytest.mark.parametrize("body", list(BODIES))
def test_stored_numbers_read_back_in_more_ways(backend, body):
    source = STORED.replace("BODY", BODIES[body])
    script = [Call(_scaled(s)) for s in (1, 2, 2, 1, 1)]
    watch = lambda env: (list(env.ns.WINDOW), dict(env.ns.D), list(env.ns.DQ), list(env.ns.ARR))
    run_case(Case(body, prog(source), script, min_hits=2, watch=watch), backend)


MODE_FROM_DATA = """
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5))

def f(x):
    model.train(x.sum().item() > 0)
    y = model(x)
    model.train()
    return y
"""


@backends()
def test_a_training_mode_computed_from_data(backend):
    script = [Call(_scaled(s)) for s in (1, 1, -1, -1, 1)]
    watch = lambda env: env.ns.model.training
    run_case(Case("mode", prog(MODE_FROM_DATA), script, min_hits=2, watch=watch), backend)
