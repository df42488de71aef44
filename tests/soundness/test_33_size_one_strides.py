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


# Strides of tensors the call computed follow the argument's, size-1 dimensions'
# included: a Python read of them must see the argument's layout (F246).
DERIVED_STRIDES = {
    "of_a_sum": "return (x + 1).stride()",
    "of_empty_like": "return tuple(torch.empty_like(x).stride())",
    "of_a_transpose": "return x.transpose(0, 1).stride()",
    "dim_order": "return x.dim_order()",
    "in_a_branch": "y = torch.empty_like(x)\n    return x * 2 if y.stride(1) == 1 else x * 3",
}


def channels_first(env):
    return (torch.randn(2, 1, 3, 3),)


def channels_last_view(env):
    # The same shape, another stride for the size-1 dimension.
    return (torch.randn(2, 3, 3, 1).permute(0, 3, 1, 2),)


@backends()
def test_strides_of_computed_tensors_follow_the_argument(backend):
    script = [*calls(2, channels_first), *calls(2, channels_last_view), *calls(2, channels_first)]
    for name, body in DERIVED_STRIDES.items():
        source = f"import torch\n\ndef f(x):\n    {body}\n"
        run_case(Case(f"strides_{name}", prog(source), script, min_hits=2), backend)
