"""Class 65: size-generic records and the sizes 0 and 1.

Found by the fifteenth session's second probe of size following (F282): torch's
meta functions reason about a followed size as Dynamo's do, taking it to be 2 or
more without a guard, so a record that follows sizes replayed for an empty
dimension with ``x[:, 1:]`` of width -1 and ``x[:, :1]`` of width 1 (and a branch
on them the other way), and a record made while a followed size was 1 answered
``x[:, ::2].is_contiguous()`` for every size.  Followed sizes are guarded to be 2
or more now, and a size of 0 or 1 is pinned (its own record), as Dynamo does.
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Call, Case, backends, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="sizes65")

SLICES = """
import torch

def f(x):
    rest, first = x[:, 1:], x[:, :1]
    if rest.shape[1] == 0:
        return torch.zeros(1), first.shape[1], x[:, ::2].is_contiguous()
    return rest * 2, first.shape[1], x[:, ::2].is_contiguous()
"""


@backends()
def test_slices_of_sizes_zero_one_and_more(backend):
    sizes = (4, 8, 6, 0, 1, 2, 1, 10, 0, 3)
    script = [Call(lambda env, n=n: (torch.arange(2.0 * n).reshape(2, n),)) for n in sizes]
    run_case(Case("sizes_zero_and_one", prog(SLICES), script, min_hits=3), backend)


CONTIGUOUS_BRANCH = """
import torch

def f(x):
    y = x[:, ::2]
    if not y.is_contiguous():
        y = y.contiguous()
    y.add_(1)
    return x
"""


@backends()
def test_a_branch_on_the_layout_of_a_slice(backend):
    sizes = (4, 8, 6, 7, 1, 2, 0, 5)
    script = [Call(lambda env, n=n: (torch.arange(2.0 * n).reshape(2, n),)) for n in sizes]
    run_case(Case("contiguous_branch", prog(CONTIGUOUS_BRANCH), script, min_hits=2), backend)
