"""Class 86: outside containers whose class overrides a mutator (found 2026-12-07).

A ``dict`` / ``list`` / ``set`` subclass of the program with its own
``__setitem__``, ``append``, ``__iadd__``, ``add`` (a meter that accumulates, a
registry that logs): the monitor steps into the method, so the store it makes with
``super()`` and its other effects are recorded on their own.

- F343: the mock made the store with ``meter[k] = v`` (or ``c.append(v)``), running
  the program's method a second time: a logging ``__setitem__`` logged twice per
  replay, an accumulating one added twice; ``c += [1]`` of a list subclass with its
  own ``__iadd__`` was replayed twice.  Taking a store back after a miss ran the
  method too.  Replayed stores go through the container class the program's
  class derives from (``dict.__setitem__(meter, k, v)``).
- F344: ``meter[k] = v`` marked the key written before the method ran, so what
  the method read of it first (``self.get(k, 0.0) + v``) was not guarded: replays
  stored the number of the record's call.
"""

from __future__ import annotations

from functools import partial

import pytest
import torch
from harness import Call, Case, backends, calls, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="containers86")

ACCUMULATING_METER = """
import torch

class Meter(dict):
    def __setitem__(self, key, value):
        super().__setitem__(key, self.get(key, 0.0) + value)

meter = Meter()

def f(x):
    meter["batches"] = 1.0
    return x * 2
"""


@backends()
def test_a_dict_subclass_that_accumulates_what_it_is_given(backend):
    watch = lambda env: dict(env.ns.meter)
    run_case(Case("meter", prog(ACCUMULATING_METER), calls(4, _vector), watch=watch), backend)


def _vector(env):
    return (torch.randn(3),)


OVERRIDES = {
    "dict_setitem": (
        (
            "class C(dict):\n    def __setitem__(self, k, v):\n"
            "        LOG.append(k)\n        super().__setitem__(k, v)\nc = C()"
        ),
        "c['a'] = 1",
    ),
    "list_setitem": (
        (
            "class C(list):\n    def __setitem__(self, i, v):\n"
            "        LOG.append(i)\n        super().__setitem__(i, v)\nc = C([0])"
        ),
        "c[0] = 5",
    ),
    "list_append": (
        "class C(list):\n    def append(self, v):\n        LOG.append(v)\n        super().append(v)\nc = C()",
        "c.append(1)",
    ),
    "list_iadd": (
        (
            "class C(list):\n    def __iadd__(self, v):\n"
            "        LOG.append('i')\n        return super().__iadd__(v)\nc = C()"
        ),
        "global c\n    c += [1]",
    ),
    "dict_update": (
        (
            "class C(dict):\n    def update(self, *a, **k):\n"
            "        LOG.append('u')\n        super().update(*a, **k)\nc = C()"
        ),
        "c.update(a=1)",
    ),
    "set_add": (
        "class C(set):\n    def add(self, v):\n        LOG.append(v)\n        super().add(v)\nc = C()",
        "c.add(1)",
    ),
    "ordereddict_setitem": (
        (
            "import collections\nclass C(collections.OrderedDict):\n    def __setitem__(self, k, v):\n"
            "        LOG.append(k)\n        super().__setitem__(k, v)\nc = C()"
        ),
        "c['a'] = 1",
    ),
}


@pytest.mark.parametrize("kind", sorted(OVERRIDES))
def test_a_mutator_of_the_program_runs_once_per_call(kind):
    cls, op = OVERRIDES[kind]
    source = f"import torch\nLOG = []\n{cls}\ndef f(x):\n    {op}\n    return x * 2\n"

    def watch(env):
        c = env.ns.c
        return list(env.ns.LOG), dict(c) if isinstance(c, dict) else sorted(c)

    run_case(Case(kind, prog(source), calls(4, _vector), min_hits=2, watch=watch))


TAKEN_BACK_ON_A_MISS = """
import torch

class Registry(dict):
    def __setitem__(self, key, value):
        LOG.append(("set", key))
        super().__setitem__(key, value)

    def __delitem__(self, key):
        LOG.append(("del", key))
        super().__delitem__(key)

LOG = []
seen = Registry()

def f(x):
    seen["last"] = 1
    if x.sum() > 0:  # a branch on data: a replay of the other path misses here
        return x * 2
    return -x
"""


@backends()
def test_a_store_taken_back_after_a_miss_does_not_run_the_method(backend):
    positive = lambda env: (torch.ones(3),)
    negative = lambda env: (-torch.ones(3),)
    script = [Call(positive), Call(positive), Call(negative), Call(positive), Call(negative)]
    watch = lambda env: (list(env.ns.LOG), dict(env.ns.seen))
    run_case(Case("taken_back", prog(TAKEN_BACK_ON_A_MISS), script, watch=watch), backend)
