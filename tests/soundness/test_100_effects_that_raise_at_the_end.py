"""Class 100: a replayed effect that raises after other effects (found 2026-12-07).

F369 (standard-library probe of the nineteenth session): ``STEP[0] += 1`` then
``heapq.heappush(Q, (STEP[0] % 2, y))``, where a tie in the priority makes the push
compare tensors and raise (or ``L.append((p, y)); L.sort()``).  The replay made the
store and the push (which appends before it raises), and then the call was run
again under the monitor: the store and the push happened twice, and where the
second run took another priority the exception eager raises was lost.  An effect
the mock replays at its end raises as it was made now; the call is not run again.
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Call, Case, backends, calls, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="raising100")


def _vector(env):
    return (torch.randn(3),)


HEAP_TIE = """
import heapq
import torch

Q = []
STEP = [0]

def f(x):
    STEP[0] += 1
    y = x * 2
    heapq.heappush(Q, (STEP[0] % 2, y))
    return y
"""


@backends()
def test_a_push_that_compares_tensors_on_a_tie(backend):
    watch = lambda env: (len(env.ns.Q), env.ns.STEP[0])
    run_case(Case("heap_tie", prog(HEAP_TIE), calls(5, _vector), watch=watch), backend)


SORTED_PAIRS = """
import torch

L = []

def f(x, priority):
    y = x * 2
    L.append((priority, y))
    L.sort()
    return y.sum()
"""


@backends()
def test_a_sort_of_pairs_that_compares_tensors(backend):
    script = [Call(lambda env, p=p: (torch.randn(3), p)) for p in (3, 5, 3, 1)]
    watch = lambda env: [p for p, _ in env.ns.L]
    run_case(Case("sorted_pairs", prog(SORTED_PAIRS), script, watch=watch), backend)
