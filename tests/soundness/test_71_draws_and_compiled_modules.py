"""Class 71: draws from the program's generators; compiled modules used as modules.

Found by the sixteenth session's probes (F295-):

- A draw from an explicit ``torch.Generator`` (``torch.randn(shape, generator=g)``)
  before a branch on ``random.random()``: a replay that drew, then missed at the
  branch's mid-guard, handed its draw to the monitoring run that followed, which
  drew again anyway (the generator one draw ahead, the result another draw's).
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Call, Case, Do, backends, calls, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="draws71")

GENERATOR_THEN_BRANCH = """
import random
import torch

gen = torch.Generator().manual_seed(0)

def f(x):
    x = x + torch.randn(x.shape, generator=gen)
    if random.random() < 0.5:
        x = x.flip(-1)
    if torch.bernoulli(torch.full((1,), 0.5), generator=gen).item() > 0:
        x = x * 2
    return x
"""


@backends()
def test_a_generator_draw_before_a_branch_on_a_python_draw(backend):
    script = calls(10, lambda env: (torch.arange(4.0),))
    watch = lambda env: env.ns.gen.get_state()
    run_case(Case("generator_draws", prog(GENERATOR_THEN_BRANCH), script, watch=watch), backend)


def test_activation_checkpointing_around_a_compiled_block():
    # F296: the non-reentrant checkpoint recomputes the block in backward and stops
    # the recompute early by raising from its saved-tensor hook; a replay took that
    # for an error of its own and ran the block again, and backward() failed.
    from torch.utils.checkpoint import checkpoint

    import fullgraph.runtime as fr

    torch.manual_seed(0)
    lin = torch.nn.Linear(8, 8)

    def block(x):
        return lin(x).relu() * 2 + lin(x).sigmoid()

    compiled = fr.compile(block, backend="eager")
    for _ in range(4):
        x = torch.randn(4, 8, requires_grad=True)
        x2 = x.detach().clone().requires_grad_()
        lin.zero_grad()
        checkpoint(block, x2, use_reentrant=False).sum().backward()
        expected = lin.weight.grad.clone()
        lin.zero_grad()
        checkpoint(compiled, x, use_reentrant=False).sum().backward()
        assert torch.equal(x.grad, x2.grad) and torch.equal(lin.weight.grad, expected)
    assert compiled.stats.hits >= 3 and compiled.stats.rerun_after_error == 0


INFERENCE_OFF_BLOCK = """
import torch

w = torch.ones(3, requires_grad=True)

def f(x):
    with torch.inference_mode(False):
        cache = torch.zeros(3) + x  # a normal tensor: the caller may update it in place
        g = w * 2  # tracked by autograd
    return cache, g
"""


def _updates_the_cache(env, result):
    result[0].add_(1)  # eager: fine; an inference tensor raises outside inference mode


@backends()
def test_an_inference_mode_false_block_in_a_call_made_in_inference_mode(backend):
    # F298: the graph ran in the caller's inference mode: its tensors were inference
    # tensors and ``g`` had no grad_fn.
    script = calls(
        4,
        lambda env: (torch.randn(3),),
        context=lambda env: torch.inference_mode(),
        then=_updates_the_cache,
    )
    run_case(Case("inference_off", prog(INFERENCE_OFF_BLOCK), script, min_hits=2), backend)


KERNEL_SWITCH_BLOCKS = """
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

def f(q, k, v):
    with sdpa_kernel([SDPBackend.MATH]):
        a = F.scaled_dot_product_attention(q, k, v)
    with torch.backends.mkldnn.flags(enabled=False):
        b = F.conv1d(q.flatten()[None, None, :64], k.flatten()[None, None, :4])
    return a, b
"""


def _attention_inputs(env):
    return tuple(torch.randn(2, 2, 16, 32) for _ in range(3))


def test_blocks_that_choose_kernels_inside_the_function():
    # F299: sdpa_kernel / mkldnn.flags blocks run torch's Python, unobserved: replays
    # computed with the default kernels (not bit-equal to eager).
    script = calls(4, _attention_inputs)
    run_case(Case("kernel_switches", prog(KERNEL_SWITCH_BLOCKS), script), "eager")


SPARSE_CHECKS = """
import torch

def f(idx, v):
    with torch.sparse.check_sparse_tensor_invariants():
        s = torch.sparse_coo_tensor(idx, v, (3,))
    scale = 2 if torch.sparse.check_sparse_tensor_invariants.is_enabled() else 3
    return s.to_dense() * scale
"""


def test_sparse_invariant_checks_inside_and_read():
    good = lambda env: (torch.tensor([[0, 2]]), torch.ones(2))
    bad = lambda env: (torch.tensor([[0, 5]]), torch.ones(2))  # eager raises
    enable = Do(lambda env: torch.sparse.check_sparse_tensor_invariants.enable(), "enable")
    disable = Do(lambda env: torch.sparse.check_sparse_tensor_invariants.disable(), "disable")
    script = [*calls(3, good), Call(bad), enable, Call(good), disable, Call(good)]
    run_case(Case("sparse_checks", prog(SPARSE_CHECKS), script), "eager")


def test_a_generator_seeded_inside_and_not_drawn_from():
    # F313: ``g = torch.Generator().manual_seed(seed)`` then a greedy path that never
    # draws: the mock handed ``manual_seed`` its own result (``c0 = ...(c0, 0)``), so
    # every replay raised UnboundLocalError inside fullgraph and ran again.
    import fullgraph.runtime as fr

    def generate(logits, seed, do_sample):
        g = torch.Generator().manual_seed(seed)
        if do_sample:
            return torch.multinomial(logits.softmax(-1), 1, generator=g)
        return logits.argmax(-1, keepdim=True)

    compiled = fr.compile(generate, backend="eager")
    for _ in range(4):
        logits = torch.randn(2, 5)
        assert torch.equal(compiled(logits, 0, False), generate(logits, 0, False))
    assert compiled.stats.rerun_after_error == 0
