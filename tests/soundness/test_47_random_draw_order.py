"""Class 47: random draws replayed with eager's numbers, in eager's order.

What was wrong:

* A record compiled for sizes that vary (the second size a function sees) drew
  Inductor's own random numbers: ``inductor_dynamic_backend`` compiled without
  ``fallback_random``, so ``dropout`` and ``randn`` gave other numbers than eager
  under the same seed from the first replay on, on every torch (F180).
* torch 2.11 / 2.12 Inductor reorders two draws no data edge orders
  (``reorder_for_locality`` moves ``w = randn(4)`` before ``a = randn(4)`` when
  ``w`` is returned first; the scheduler's peak-memory pass and the move of CPU
  constructors to the GPU can too): the replay swapped the two tensors' numbers.
  ``runtime/inductor_random_order.py`` skips those passes for graphs that draw
  (torch 2.13 orders the draws itself, F181).
* Scaled-dot-product attention with ``dropout_p`` and an RNN with dropout draw
  random numbers, but the record did not say so: a replay that missed at a later
  mid-guard ran the call again from a generator its graphs had advanced, so the
  eager rerun drew other numbers (F182).
"""

from __future__ import annotations

import pytest
import torch
from harness import Call, Case, backends, calls, prog, run_case


def vec4(env):
    return (torch.randn(4),)


DRAWS_RETURNED_IN_ANOTHER_ORDER = """
import torch

def f(x):
    a = torch.randn(4)
    w = torch.randn(4)
    b = torch.rand(3)
    return b, w + x, a
"""


@backends(inductor=True)
def test_draws_returned_in_another_order(backend):
    """No data edge orders the three draws; the replay must still make them in order."""
    run_case(
        Case(
            "draws_returned_in_another_order",
            prog(DRAWS_RETURNED_IN_ANOTHER_ORDER),
            calls(4, vec4),
            min_hits=3,
        ),
        backend,
    )


@backends(inductor=True)
def test_draws_returned_in_another_order_under_no_grad(backend):
    """The inference graph is where torch 2.11 moved a draw to its first user."""
    run_case(
        Case(
            "draws_returned_in_another_order_under_no_grad",
            prog(DRAWS_RETURNED_IN_ANOTHER_ORDER),
            calls(4, vec4, context=lambda env: torch.no_grad()),
            min_hits=3,
        ),
        backend,
    )


DRAWS_SIZED_BY_THE_ARGUMENT = """
import torch

def f(x):
    noise = torch.randn(x.shape[0], 4)
    return torch.nn.functional.dropout(x * 2, 0.5) + noise
"""


def rows(n):
    return lambda env: (torch.randn(n, 4),)


@backends(inductor=True)
def test_draws_sized_by_the_argument(backend):
    """The second size makes a size-generic record: its draws are eager's too."""
    run_case(
        Case(
            "draws_sized_by_the_argument",
            prog(DRAWS_SIZED_BY_THE_ARGUMENT),
            [Call(rows(n)) for n in (3, 5, 7, 9, 11, 6)],
            min_hits=3,
        ),
        backend,
    )


ATTENTION_DROPOUT_THEN_A_BRANCH = """
import torch
import torch.nn.functional as F

def f(q):
    h = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    if h.sum() > 0:
        return h * 2
    return h - 1
"""


def heads(env):
    return (torch.randn(1, 2, 3, 4),)


@backends(inductor=True)
def test_attention_dropout_before_a_data_branch(backend):
    """Calls take either branch: a replay that misses at the branch runs the call
    again, from the generator state it had before the attention's dropout."""
    run_case(
        Case(
            "attention_dropout_before_a_data_branch",
            prog(ATTENTION_DROPOUT_THEN_A_BRANCH),
            calls(10, heads),
            min_hits=3,
        ),
        backend,
    )


RNN_DROPOUT_THEN_A_BRANCH = """
import torch

rnn = torch.nn.GRU(4, 4, num_layers=2, dropout=0.5)

def f(x):
    y, _ = rnn(x)
    if (y + x).sum() > 0:
        print("up")
        return y * 2
    return y - 1
"""


@backends(inductor=False)
def test_rnn_dropout_before_a_data_branch(backend):
    run_case(
        Case(
            "rnn_dropout_before_a_data_branch",
            prog(RNN_DROPOUT_THEN_A_BRANCH),
            calls(10, lambda env: (torch.randn(3, 1, 4),)),
            min_hits=3,
        ),
        backend,
    )


CPU_DRAW_USED_ON_THE_GPU = """
import torch

def f(x):
    a = torch.randn(4)
    b = torch.randn(4)
    return x + a.cuda(), b.cuda() * x
"""


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@backends(inductor=True)
def test_cpu_draws_used_on_the_gpu(backend):
    """Eager draws from the CPU generator; a graph that moved the constructors to the
    GPU (torch 2.11's Inductor) would draw from the CUDA one."""
    run_case(
        Case(
            "cpu_draws_used_on_the_gpu",
            prog(CPU_DRAW_USED_ON_THE_GPU),
            calls(4, lambda env: (torch.randn(4, device="cuda"),)),
            min_hits=3,
        ),
        backend,
    )
