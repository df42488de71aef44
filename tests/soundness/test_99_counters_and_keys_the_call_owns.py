"""Class 99: counters on modules and namespaces, keys the call stores and deletes (found 2026-12-07).

Costs found by the nineteenth session's attribute-storage probe (correct, never
replayed):

- F367: ``stats.n += 1`` on a ``types.ModuleType`` (``import stats`` as a counter
  module) or a ``types.SimpleNamespace``: their C ``__setattr__`` was taken for code
  the stored number is handed to, so the count was pinned (a record per call).
  They store into the instance's ``__dict__`` as ``object.__setattr__`` does.
- F368: ``D["tmp"] = v; ...; del D["tmp"]``: the deletion guarded that ``"tmp"`` was
  in ``D`` at entry (it never is), a record per call.  A key the call stored itself
  needs no such check.

Each case also changes the state between calls, so a replay that kept a number or a
key would be seen.
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Call, Case, backends, calls, execg, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="owned99")


def _vector(env):
    return (torch.randn(3),)


COUNTERS = """
import types
import torch

stats = types.ModuleType("stats")
stats.n = 0
state = types.SimpleNamespace(steps=0, scale=2.0)

def f(x):
    stats.n += 1
    state.steps += 2
    return x * state.scale + stats.n
"""


@backends()
def test_counters_on_a_module_and_a_namespace(backend):
    script = [*calls(3, _vector), execg("stats.n = 10; state.scale = 3.0"), *calls(3, _vector)]
    watch = lambda env: (env.ns.stats.n, env.ns.state.steps, env.ns.state.scale)
    case = Case("counters", prog(COUNTERS), script, min_hits=3, watch=watch)
    run_case(case, backend)


KEY_SET_THEN_DELETED = """
import torch

D = {"scale": 1.0}

def f(x):
    D["tmp"] = x.shape[0]
    y = x * D["scale"] + D["tmp"]
    del D["tmp"]
    return y
"""


@backends()
def test_a_key_the_call_stores_and_deletes(backend):
    script = [
        *calls(2, _vector),
        execg("D['tmp'] = 99"),
        Call(_vector),
        execg("D['scale'] = 4.0"),
        *calls(2, _vector),
    ]
    watch = lambda env: dict(env.ns.D)
    case = Case("key_set_del", prog(KEY_SET_THEN_DELETED), script, min_hits=3, watch=watch)
    run_case(case, backend)
