"""Class 68: functions behind ``functools.lru_cache``; what a custom backward reads late.

Left open by the fifteenth session's probes (F288, F289):

- A builder behind ``functools.lru_cache`` (a mask or a table per size) that counts
  its builds or prints: the wrapper is C code, so the monitor replays the call,
  and a record made when the call hit assumed it hits again.  A size-generic record
  replayed for a new size: the cache missed, the builder ran (the count went up)
  and the program went on with the count of the record's call.
- A custom ``Function``'s backward that reads a value from outside (``ALPHA``,
  ``cfg.scale``) the caller changes between the forward and ``backward()``: the
  backward is captured into the graph at the forward, with the value of then;
  eager's backward reads it when gradients flow.
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Call, Case, backends, calls, module_prog, run_case, setg
from harness import prog as shared_prog

prog = partial(shared_prog, name="cached68")

BUILD_COUNTER = """
import functools
import torch

BUILDS = 0

@functools.lru_cache(maxsize=None)
def causal_mask(n):
    global BUILDS
    BUILDS += 1
    return torch.ones(n, n).tril()

def f(x):
    mask = causal_mask(x.shape[0])
    return x @ mask + BUILDS
"""


def _square(n):
    return lambda env: (torch.randn(n, n),)


@backends()
def test_a_builder_behind_lru_cache_that_counts_its_builds(backend):
    # sizes 3, 3, 4 (the sizes are followed from here), 4, 5, 5, 6, 3
    script = [*calls(2, _square(3)), *calls(2, _square(4)), *calls(2, _square(5))]
    script += [Call(_square(6)), Call(_square(3))]
    watch = lambda env: env.ns.BUILDS
    run_case(Case("build_counter", prog(BUILD_COUNTER), script, min_hits=2, watch=watch), backend)


CACHED_METHOD_PRINTS = """
import functools
import random
import torch

class Positions(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.built = []

    @functools.lru_cache(maxsize=4)
    def table(self, n):
        print("building the table for", n)
        self.built.append(n)
        return torch.arange(n, dtype=torch.float32)

    def forward(self, x):
        jitter = random.random()
        return x + self.table(x.shape[-1]) + jitter + len(self.built)

def make():
    return Positions()
"""


_positions = module_prog(CACHED_METHOD_PRINTS, name="cached68m")


@backends()
def test_a_cached_method_that_prints_after_a_random_draw(backend):
    script = [*calls(3, lambda env: (torch.randn(2, 4),))]
    script += [*calls(2, lambda env: (torch.randn(2, 6),)), Call(lambda env: (torch.randn(2, 8),))]
    script += [Call(lambda env: (torch.randn(2, 4),))]
    watch = lambda env: list(env.target.built)
    run_case(Case("cached_method", _positions, script, min_hits=2, watch=watch), backend)


GRADIENT_REVERSAL = """
import torch

ALPHA = 1.0

class GradReverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.view_as(x) * 1.0

    @staticmethod
    def backward(ctx, grad):
        return -ALPHA * grad

w = torch.nn.Parameter(torch.ones(3))

def f(x):
    return (GradReverse.apply(x * w) ** 2).sum()
"""


def _alpha_raised_then_backward(env, loss):
    # a schedule that raises the reversal weight after the forward (eager's
    # backward reads the new one)
    env.ns.ALPHA = env.ns.ALPHA + 0.5
    loss.backward()


@backends()
def test_a_custom_backward_reads_a_global_changed_after_the_forward(backend):
    step = Call(lambda env: (torch.randn(3),), then=_alpha_raised_then_backward)
    script = [step, step, step, setg("ALPHA", "1.0"), step]
    watch = lambda env: (env.ns.w.grad, env.ns.ALPHA)
    run_case(Case("late_alpha", prog(GRADIENT_REVERSAL), script, watch=watch), backend)


def test_a_custom_backward_reading_only_its_ctx_is_still_one_graph():
    source = GRADIENT_REVERSAL.replace(
        "return x.view_as(x) * 1.0", "ctx.alpha = ALPHA\n        return x.view_as(x) * 1.0"
    )
    source = source.replace("return -ALPHA * grad", "return -ctx.alpha * grad")
    step = Call(lambda env: (torch.randn(3),), then=lambda env, loss: loss.backward())
    script = [step, step, setg("ALPHA", "2.0"), step, step]
    watch = lambda env: env.ns.w.grad
    result = run_case(Case("ctx_alpha", prog(source), script, watch=watch, min_hits=2), "eager")
    assert result.records == 2  # one per ALPHA, each one graph with the user's backward


SHAPE_KEYED_MEMO = """
import torch

BIASES = {}

def f(x):
    key = tuple(x.shape)
    if key not in BIASES:
        BIASES[key] = torch.linspace(0, 1, x.shape[-1])
    return x + BIASES[key]
"""


@backends()
def test_a_memo_keyed_by_the_shape_tuple(backend):
    # F291: the store with a key of followed sizes refused the record and stopped
    # monitoring (every later call eager), and left SizeInts in the caller's keys.
    script = [Call(_square(n)) for n in (2, 3, 2, 3, 2, 3, 4, 4, 4)]
    watch = lambda env: [(key, [type(n) is int for n in key]) for key in env.ns.BIASES]
    run_case(Case("shape_memo", prog(SHAPE_KEYED_MEMO), script, min_hits=3, watch=watch), backend)
