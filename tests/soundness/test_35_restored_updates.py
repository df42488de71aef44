"""Class 35: in-place updates of outside tensors before a decision or a raise.

BatchNorm in training mode updates its running mean and variance in the kernel
without moving their version counters, so the monitor did not see it: a data
check hoisted in front of the graph (``h = bn(x); if h.sum() > 0:``) ran the
batch norm a second time and the running stats moved twice per replay.  The
update is now seen, and a graph's in-place update of an outside tensor before
a later callout is saved first and put back when the replay misses at a
mid-guard or raises: the record replays (it was FG207, monitored every call)
and a replay that raises after a store (``self.log.append(v)``) runs the program
again from the state the call found, so the store is not lost.
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Case, backends, calls, execg, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="restored35")


def signed(env):
    return (torch.randn(4, 3) + (1.0 if torch.rand(()) > 0.5 else -1.0),)


BN_THEN_BRANCH = """
import torch

bn = torch.nn.BatchNorm1d(3)
lin = torch.nn.Linear(3, 3)

def f(x):
    h = bn(x)
    if h.sum() > 0:
        return lin(h)
    return h * 2
"""


@backends()
def test_batch_norm_before_a_data_dependent_branch(backend):
    run_case(
        Case(
            "batch_norm_before_a_data_dependent_branch",
            prog(BN_THEN_BRANCH),
            [*calls(6, signed), execg("bn.eval()"), *calls(3, signed)],
            min_hits=4,
        ),
        backend,
    )


BUFFER_THEN_RAISE = """
import torch

class Counter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros(()))
        self.log = []

    def forward(self, x, idx):
        self.count += 1
        v = (x.sum() + self.count).item()
        self.log.append(v)
        return (x * v)[idx]  # raises for an index out of range

m = Counter()
f = m.forward
"""


@backends()
def test_a_store_before_a_raise_is_kept(backend):
    def at(i):
        return lambda env: (torch.arange(3.0), torch.tensor(i))

    script = [step for i in (0, 1, 2, 7, 1, 9, 0) for step in calls(1, at(i))]
    run_case(
        Case(
            "a_store_before_a_raise_is_kept",
            prog(BUFFER_THEN_RAISE),
            script,
            watch=lambda env: (env.ns.m.count.clone(), list(env.ns.m.log)),
            min_hits=2,
        ),
        backend,
    )


STATE_THEN_BRANCH = """
import torch

state = torch.zeros(3)

def f(x):
    state.add_(x.abs())
    if state.max() > 3:
        state.zero_()
        return x - 1
    return x + state
"""


@backends()
def test_an_outside_tensor_updated_before_a_branch(backend):
    run_case(
        Case(
            "an_outside_tensor_updated_before_a_branch",
            prog(STATE_THEN_BRANCH),
            calls(10, lambda env: (torch.randn(3),)),
            min_hits=3,
        ),
        backend,
    )


GRADS_SCALED_IN_A_LOOP = """
import torch

params = [torch.nn.Parameter(torch.randn(3)) for _ in range(3)]

def set_grads(which):
    for i, p in enumerate(params):
        p.grad = torch.full((3,), float(i + 1)) if i in which else None

def f(x):
    for p in params:
        if p.grad is not None:
            p.grad.mul_(0.5)
    return x * 2
"""


@backends()
def test_grads_scaled_before_a_later_grad_read(backend):
    """``p.grad`` is a callout whose result is outside state: the update of the first
    grads is put back when the replay misses at a later ``is None`` (F103)."""

    def vector(env):
        return (torch.randn(2),)

    run_case(
        Case(
            "grads_scaled_before_a_later_grad_read",
            prog(GRADS_SCALED_IN_A_LOOP),
            [
                *[
                    step
                    for _ in range(3)
                    for step in (execg("set_grads((0, 1, 2))"), *calls(1, vector))
                ],
                execg("set_grads((0, 1))"),
                *calls(1, vector),
                execg("set_grads((0, 1, 2))"),
                *calls(1, vector),
                execg("set_grads((0, 1))"),
                *calls(1, vector),
            ],
            min_hits=3,
        ),
        backend,
    )
