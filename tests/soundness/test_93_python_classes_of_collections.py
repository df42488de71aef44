"""Class 93: collections' Python classes changed in the call (found 2026-12-07).

F353 (preprocessing probe): ``collections`` was opaque to the monitor as a whole,
and its classes are Python: ``cnt.update(pred.tolist())`` on an outside
``Counter`` was taken for ``dict.update`` (whose argument list is the one it
"changes"), ``cnt.subtract([1])`` and ``ul.append(1)`` of a ``UserList`` for
reads.  No store was recorded: after the caller cleared or replaced the counter, a
replay left it empty; ``len(ul)`` came back as the first call's.  The monitor
steps into ``collections/__init__.py`` now (as into ``_collections_abc``), so the
methods' own stores are recorded.
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Case, backends, calls, execg, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="collections93")

COUNTERS = """
import torch
from collections import Counter, UserList

cnt = Counter()
ul = UserList()

class Meter:
    def __init__(self):
        self.reset()

    def reset(self):
        self.counts = Counter()

meter = Meter()

def per_class(y):
    cnt.update(y.tolist())  # per-class counts
    return y + 1

def subtracted(y):
    cnt.subtract([1])
    return y + 1

def appended(y):
    ul.append(1)
    return y + 1, len(ul)

def per_epoch(logits):
    meter.counts.update(logits.argmax(1).tolist())
    return logits.softmax(1)
"""


def _labels(env):
    return (torch.tensor([0, 1, 1]),)


def _logits(env):
    return (torch.tensor([[5.0, 0.0], [0.0, 5.0], [0.0, 5.0]]),)


def _watch(env):
    return dict(env.ns.cnt), list(env.ns.ul), dict(env.ns.meter.counts)


@backends()
def test_counter_update_and_subtract_after_a_reset(backend):
    for target in ("per_class", "subtracted"):
        script = [*calls(2, _labels), execg("cnt.clear()"), *calls(2, _labels)]
        run_case(Case(target, prog(COUNTERS, target=target), script, watch=_watch), backend)


@backends()
def test_a_user_list_appended_to(backend):
    run_case(
        Case("appended", prog(COUNTERS, target="appended"), calls(3, _labels), watch=_watch),
        backend,
    )


@backends()
def test_a_fresh_counter_each_epoch_replays(backend):
    script = [*calls(2, _logits), execg("meter.reset()"), *calls(2, _logits)]
    run_case(
        Case("per_epoch", prog(COUNTERS, target="per_epoch"), script, min_hits=2, watch=_watch),
        backend,
    )
