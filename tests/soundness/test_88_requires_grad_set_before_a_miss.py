"""Class 88: state changed before a branch on data that misses (found 2026-12-07).

F346 (aliasing probe): ``x.mul_(2); x.requires_grad_(); if x.sum().item() > 0:``.
A replay of the other path took the in-place update back when it missed at the
branch, but not the flag; the monitoring run that followed updated a leaf that
requires grad in place and the user's call raised ("a leaf Variable that requires
grad is being used in an in-place operation").  The mock now puts the flag back on
a miss, and the call is no longer among those made (the next record tried, or the
monitoring run, flags the tensor again).
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Call, Case, backends, execg, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="flags88")

BRANCH_ON_THE_FLAGGED_ARGUMENT = """
import torch

def f(x):
    x.mul_(2)
    x.requires_grad_()
    if x.sum().item() > 0:
        return x * 2
    return x * 3
"""

BRANCH_ON_ANOTHER_ARGUMENT = """
import torch

def f(x, y):
    x.add_(1)
    x.requires_grad_()
    if y.sum().item() > 0:
        return x * 2
    return x * 3
"""


def _signed(sign, count=1):
    return lambda env: tuple(torch.ones(3) * sign for _ in range(count))


@backends()
def test_a_flag_set_before_a_branch_that_misses(backend):
    script = [
        Call(_signed(1)),
        Call(_signed(1)),
        Call(_signed(-1)),
        Call(_signed(-1)),
        Call(_signed(1)),
    ]
    run_case(
        Case("flagged_branch", prog(BRANCH_ON_THE_FLAGGED_ARGUMENT), script, min_hits=2), backend
    )


@backends()
def test_the_next_record_flags_the_argument_again(backend):
    # the second record is tried after the first missed at the branch: its result
    # must come from a tensor that requires grad (a grad_fn), as eager's does
    script = [Call(_signed(s, 2)) for s in (1, 1, -1, -1, 1, -1)]
    run_case(Case("next_record", prog(BRANCH_ON_ANOTHER_ARGUMENT), script, min_hits=3), backend)


# F354 (probe of this session's fixes): an update through ``.data`` / ``.detach()``
# of a tensor from outside writes its memory inside the graph, with no write-back
# the mock could take back when the branch after it misses: the monitoring run
# then updated it a second time.  Such a record is monitored each time now.
THROUGH_AN_ALIAS = """
import torch

class Tracker(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("run", torch.ones(3))

    def forward(self, x):
        self.run.data.mul_(2)
        x.detach().add_(1)
        if self.run.sum().item() > 0:
            return x * self.run
        return x - self.run

tracker = Tracker()
"""


@backends()
def test_an_update_through_data_before_a_branch_that_misses(backend):
    vector = lambda env: (torch.ones(3),)
    script = [
        Call(vector),
        Call(vector),
        execg("tracker.run.fill_(-1.0)"),
        Call(vector),
        Call(vector),
    ]
    watch = lambda env: env.ns.tracker.run
    run_case(
        Case("through_alias", prog(THROUGH_AN_ALIAS, target="tracker"), script, watch=watch),
        backend,
    )
