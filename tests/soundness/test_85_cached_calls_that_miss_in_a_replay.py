"""Class 85: a replay whose ``lru_cache`` call would miss.

F288 made a replay whose cached call missed go back to monitoring (the builder
ran once, in the replay).  Left open by the seventeenth session's probes, and
found with them (F340, F341):

- What the program read and printed before the cached call saw the build: the
  replay made the call (the builder counted, printed), then missed, and the
  monitoring run read the counter and printed its line after it (eager: ``forward
  5`` then ``building mask 5``; fullgraph the other order, ``before`` one higher).
- A cached call whose number result the record follows as a symbol has no
  mid-guard on its value: a replay whose call missed went on with the miss marker
  (``CacheMissed(10)`` returned to the caller, or handed to the graph).

The mock now looks the call's key up in the wrapper's cache and does not make a
call that would miss; it checks after the call that the cache held it.
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Call, Case, backends, calls, module_prog, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="cached85")


def _square(n):
    return lambda env: (torch.randn(n, n),)


def _sizes(*sizes, each=2):
    return [step for n in sizes for step in calls(each, _square(n))]


READ_AND_PRINTED_BEFORE = """
import functools
import torch

BUILDS = 0

@functools.lru_cache(maxsize=None)
def causal_mask(n):
    global BUILDS
    BUILDS += 1
    print("building mask", n)
    return torch.ones(n, n).tril()

def f(x):
    n = x.shape[0]
    print("forward", n)
    before = BUILDS
    mask = causal_mask(n)
    return x @ mask, before, BUILDS
"""


@backends()
def test_reads_and_prints_before_a_cached_call_that_misses(backend):
    script = [*_sizes(3, 4, 5), Call(_square(3)), *_sizes(6)]
    watch = lambda env: env.ns.BUILDS
    run_case(
        Case("read_before", prog(READ_AND_PRINTED_BEFORE), script, min_hits=3, watch=watch), backend
    )


NUMBER_RETURNED = """
import functools
import torch

CALLS = []

@functools.lru_cache(maxsize=None)
def width(n):
    CALLS.append(n)
    return n * 2

def f(x):
    return x * 2, width(x.shape[0])
"""


@backends()
def test_a_cached_number_returned_to_the_caller(backend):
    script = [*_sizes(3, 4, 5), Call(_square(3))]
    watch = lambda env: list(env.ns.CALLS)
    run_case(
        Case("number_returned", prog(NUMBER_RETURNED), script, min_hits=3, watch=watch), backend
    )


NUMBER_INTO_THE_GRAPH = """
import functools
import torch

CALLS = []

@functools.lru_cache(maxsize=8)
def scale(n):
    CALLS.append(n)
    return n + 10

def f(x):
    return x * scale(x.shape[0])
"""


@backends()
def test_a_cached_number_used_by_the_graph(backend):
    script = [*_sizes(3, 4, 5), Call(_square(3))]
    watch = lambda env: list(env.ns.CALLS)
    run_case(
        Case("number_in_graph", prog(NUMBER_INTO_THE_GRAPH), script, min_hits=3, watch=watch),
        backend,
    )


CACHED_METHOD = """
import functools
import torch

class Rotary(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.built = 0

    @functools.lru_cache(maxsize=4)
    def angles(self, n, base):
        self.built += 1
        print("angles for", n)
        return torch.arange(n, dtype=torch.float32) / base

    def forward(self, x):
        print("rotary", x.shape[-1], self.built)
        return x + self.angles(x.shape[-1], 10000.0) + self.built

def make():
    return Rotary()
"""


_rotary = module_prog(CACHED_METHOD, name="cached85m")


@backends()
def test_a_cached_method_with_two_arguments(backend):
    rows = lambda n: lambda env: (torch.randn(2, n),)
    script = [step for n in (4, 6, 8, 4) for step in calls(2, rows(n))]
    watch = lambda env: env.target.built
    run_case(Case("cached_method", _rotary, script, min_hits=3, watch=watch), backend)


KEYWORD_AND_TYPED = """
import functools
import torch

LOG = []

@functools.lru_cache(maxsize=None)
def by_keyword(n, *, scale):
    LOG.append(("keyword", n))
    return torch.full((n,), float(scale))

@functools.lru_cache(maxsize=None, typed=True)
def typed(n):
    LOG.append(("typed", n))
    return torch.arange(n, dtype=torch.float32)

def f(x):
    print("f", len(LOG))
    n = x.shape[-1]
    return x + by_keyword(n, scale=2) + typed(n), len(LOG)
"""


@backends()
def test_keyword_and_typed_caches_are_still_right(backend):
    # the key can't be looked up: the replay makes the call and hands its result on
    rows = lambda n: lambda env: (torch.randn(2, n),)
    script = [step for n in (3, 4, 5, 3) for step in calls(2, rows(n))]
    watch = lambda env: list(env.ns.LOG)
    run_case(
        Case("keyword_typed", prog(KEYWORD_AND_TYPED), script, min_hits=2, watch=watch), backend
    )
