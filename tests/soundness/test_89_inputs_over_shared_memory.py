"""Class 89: inputs updated in place beside inputs over the same bytes (found 2026-12-07).

A record whose graph updates an input in place computed the other inputs from
their values before the update: right only where no other input lies in the same
memory, which the guard checks.  It compared storage objects:

- F347: ``torch.from_numpy(buf[:4])`` and ``torch.from_numpy(buf[1:5])`` (or a
  ``from_dlpack`` view, or a global ``STATE = torch.from_numpy(arr)`` updated in
  place beside an argument made from ``arr[2:6]``) are two storages over the same
  bytes: the guard passed and the replay read the argument before the update.
- F348 (cost): ``cache[0]`` and ``cache[1]`` of one buffer (a static KV cache) are
  one storage with bytes apart: never recorded, eager for good after four calls;
  empty tensors (all at address 0) counted as sharing memory.

The bytes each tensor's elements span are compared now (``memory_extent``).
"""

from __future__ import annotations

from functools import partial

import numpy as np
import torch
from harness import Call, Case, backends, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="shared89")

UPDATE_THEN_READ = """
import torch

def f(a, b):
    a.add_(1)
    return b * 2
"""


def _windows(first, second):
    def make(env):
        buf = np.arange(8, dtype=np.float32)
        return torch.from_numpy(buf[first]), torch.from_numpy(buf[second])

    return make


def _dlpack_overlap(env):
    t = torch.arange(8.0)
    return t[:4], torch.from_dlpack(t[1:5])


@backends()
def test_two_numpy_windows_over_the_same_bytes(backend):
    apart, overlapping = _windows(slice(0, 4), slice(4, 8)), _windows(slice(0, 4), slice(1, 5))
    script = [Call(apart), Call(apart), Call(overlapping), Call(overlapping), Call(apart)]
    run_case(Case("numpy_windows", prog(UPDATE_THEN_READ), script, min_hits=2), backend)


@backends()
def test_a_dlpack_view_over_an_updated_argument(backend):
    apart = _windows(slice(0, 4), slice(4, 8))
    script = [Call(apart), Call(apart), Call(_dlpack_overlap), Call(_dlpack_overlap)]
    run_case(Case("dlpack_view", prog(UPDATE_THEN_READ), script, min_hits=1), backend)


GLOBAL_STATE_OVER_AN_ARRAY = """
import numpy as np
import torch

arr = np.zeros(8, dtype=np.float32)
STATE = torch.from_numpy(arr)

def f(x):
    STATE.add_(1)
    return x * 2
"""


@backends()
def test_an_argument_over_the_array_of_an_updated_global(backend):
    fresh = lambda env: (torch.zeros(4),)
    window = lambda env: (torch.from_numpy(env.ns.arr[2:6]),)
    script = [Call(fresh), Call(fresh), Call(window), Call(window), Call(fresh)]
    watch = lambda env: env.ns.STATE
    run_case(Case("global_array", prog(GLOBAL_STATE_OVER_AN_ARRAY), script, watch=watch), backend)


STATIC_KV_CACHE = """
import torch

def f(k_cache, v_cache, k, v, pos):
    k_cache[pos] = k
    v_cache[pos] = v
    return (k_cache[: pos + 1] * v_cache[: pos + 1]).sum(0)
"""


@backends(inductor=True)
def test_disjoint_views_of_one_buffer_updated_in_place(backend):
    def step(env):
        if not hasattr(env, "cache"):
            env.cache = torch.zeros(2, 8, 4)
        return env.cache[0], env.cache[1], torch.randn(4), torch.randn(4), 3

    watch = lambda env: env.cache
    script = [Call(step) for _ in range(5)]
    run_case(Case("kv_views", prog(STATIC_KV_CACHE), script, min_hits=3, watch=watch), backend)


EMPTY_UPDATED = """
import torch

def f(a, b):
    a.mul_(2)
    return torch.cat([a, b]) + 1
"""


@backends()
def test_empty_tensors_share_no_memory(backend):
    empties = lambda env: (torch.zeros(0), torch.zeros(0))
    run_case(
        Case("empties", prog(EMPTY_UPDATED), [Call(empties) for _ in range(4)], min_hits=2), backend
    )
