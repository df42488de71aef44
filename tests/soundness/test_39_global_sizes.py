"""Class 39: sizes of tensors reached through globals, in size-generic records.

Once an argument's size varies, the next record is size-generic: the guard
lets the varying dimensions of the tensors it read vary, and the sizes the
program read are symbols the mock re-reads.  A tensor reached through a global
(a KV cache in a global dict, a position table the caller replaces, a global
model's buffer) had its varying dimension let go by the guard, but its size
is not followed (the mock reads sizes through the arguments and the module
only), so the number the first call saw was baked in: a growing cache's
length stopped at one value (found by a probe of model code).  The guard now
lets vary only the dimensions the run followed.  Also here: the shape
tracker's fake ops ran with grad on, so inside ``torch.utils.checkpoint`` they
saved tensors the checkpoint counted, and its recomputation raised.
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Call, Case, backends, execg, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="globals39")


def tokens(n):
    return lambda env: (torch.randn(1, n, 2),)


GLOBAL_CACHE = """
import torch

state = {"k": None}

def step(x):
    k = state["k"]
    past = 0 if k is None else k.shape[1]  # the cache's length, as get_seq_length()
    pos = torch.arange(past, past + x.shape[1])
    y = x + pos.unsqueeze(-1)
    state["k"] = y if k is None else torch.cat([k, y], dim=1)
    return y, past
"""


@backends(inductor=True)
def test_a_growing_cache_in_a_global(backend):
    generation = [Call(tokens(3), label="prompt")] + [Call(tokens(1)) for _ in range(4)]
    run_case(
        Case(
            "a_growing_cache_in_a_global",
            prog(GLOBAL_CACHE, "step"),
            [*generation, execg("state['k'] = None"), *generation],
            min_hits=3,
        ),
        backend,
    )


POSITION_TABLE = """
import torch

pos_table = torch.arange(8.0)

def f(x):
    n = pos_table.shape[0]
    return x.sum(1) + n, n
"""


@backends()
def test_a_global_table_the_caller_grows(backend):
    def wide(n):
        return lambda env: (torch.randn(2, n),)

    run_case(
        Case(
            "a_global_table_the_caller_grows",
            prog(POSITION_TABLE),
            [
                Call(wide(3)),
                Call(wide(5)),
                Call(wide(2)),
                execg("pos_table = torch.arange(12.0)"),
                Call(wide(2)),
                Call(wide(4)),
                execg("pos_table = torch.arange(16.0)"),
                Call(wide(3)),
                Call(wide(7)),
                Call(wide(6)),
            ],
            min_hits=3,
        ),
        backend,
    )


GLOBAL_MODEL_BUFFER = """
import torch

class Positions(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("pos", torch.zeros(8, 2))

    def forward(self, x):
        n = self.pos.shape[0]
        return x.sum(1, keepdim=True) + n, n

model = Positions()

def f(x):
    return model(x)
"""


@backends()
def test_a_global_models_buffer_resized(backend):
    run_case(
        Case(
            "a_global_models_buffer_resized",
            prog(GLOBAL_MODEL_BUFFER),
            [
                *(Call(tokens(n)) for n in (1, 2, 3, 4)),
                execg("model.pos = torch.zeros(12, 2)"),
                *(Call(tokens(n)) for n in (1, 2, 3)),
                execg("model.pos = torch.zeros(16, 2)"),
                *(Call(tokens(n)) for n in (1, 2, 3)),
            ],
            min_hits=3,
        ),
        backend,
    )


CHECKPOINT_SWITCHED_ON = """
import torch
from torch.utils.checkpoint import checkpoint

lin = torch.nn.Linear(4, 4)
use_checkpoint = False

def block(x):
    return torch.relu(lin(x))

def step(x):
    lin.zero_grad()
    h = checkpoint(block, x, use_reentrant=False) if use_checkpoint else block(x)
    h.sum().backward()
    return lin.weight.grad.clone()
"""


@backends()
def test_gradient_checkpointing_switched_on_later(backend):
    def batch(env):
        return (torch.randn(2, 4),)

    run_case(
        Case(
            "gradient_checkpointing_switched_on_later",
            prog(CHECKPOINT_SWITCHED_ON, "step"),
            [
                Call(batch),
                Call(batch),
                execg("use_checkpoint = True"),
                Call(batch),
                Call(batch),
                Call(batch),
            ],
        ),
        backend,
    )
