"""Class 33: strides of size-1 dimensions, which no kernel uses.

A decoding step that takes the last token of a growing sequence of batch 1
(``ids[:, -1:]``, shape ``(1, 1)``) gets a tensor whose strides change on every
step although no kernel uses them; guarding them made every step a miss (and
the function eager after the recompile limit).  The guard leaves those strides out; the other strides
are still checked (a transposed input is a miss), and every call must give
eager's result.
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Case, backends, calls, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="strides33")

DECODE = """
import torch

embed = torch.nn.Embedding(10, 4)
head = torch.nn.Linear(4, 10)
SEQ = [torch.zeros(1, 3, dtype=torch.long)]

def step(last):
    return head(embed(last)).softmax(-1)
"""


def growing(env):
    seq = env.ns.SEQ[0]
    env.ns.SEQ[0] = torch.cat([seq, (seq[:, -1:] + 1) % 10], 1)
    return (env.ns.SEQ[0][:, -1:],)


@backends(inductor=True)
def test_the_last_token_of_a_growing_sequence_replays(backend):
    run_case(
        Case(
            "last_token_of_a_growing_sequence", prog(DECODE, "step"), calls(6, growing), min_hits=4
        ),
        backend,
    )


LAYOUT = """
import torch

def f(x):
    return x * torch.arange(x.shape[-1])
"""


def column(env):
    return (torch.randn(3, 1),)


def row_view(env):
    return (torch.randn(5, 3)[:, :1],)


def transposed(env):
    return (torch.randn(1, 3).t(),)


@backends(inductor=True)
def test_other_strides_are_still_checked(backend):
    run_case(
        Case(
            "other_strides_are_still_checked",
            prog(LAYOUT),
            [
                *calls(2, column),
                *calls(2, row_view),
                *calls(2, transposed),
                *calls(2, lambda env: (torch.randn(1, 3)[:, [0, 2]],)),
            ],
            min_hits=3,
        ),
        backend,
    )
