"""Class 104: torch ops that update tensors without moving their version counters (found 2026-12-07).

F380 (training-step probe of the nineteenth session): a hand-written loss scaler's
``torch._amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale)``
(the op ``GradScaler.unscale_`` uses) updates the gradients and ``found_inf`` in place
without moving their version counters, and returns ``()``: the monitor saw no update,
took the call for a pure one, and the graph dropped it; replays stepped the optimizer
with the scaled gradients and never saw an inf (``torch._amp_update_scale_``'s growth
tracker likewise).  The arguments an op's aten schema marks as written count as
updated (``torch_internals.schema_updates``), and an update whose result no graph
node records is refused, never dropped.
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Call, Case, backends, calls, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="unversioned104")


UNSCALE = """
import torch

def f(g, found):
    inv = torch.full((), 0.5)
    torch._amp_foreach_non_finite_check_and_unscale_([g], found, inv)
    return g.sum()
"""


def _gradient(with_inf):
    def build(env):
        g = torch.randn(4)
        if with_inf:
            g[0] = float("inf")
        return g, torch.zeros(1)

    return build


@backends()
def test_the_unscale_op_of_a_loss_scaler(backend):
    script = [Call(_gradient(i == 2)) for i in range(5)]
    run_case(Case("unscale", prog(UNSCALE), script, min_hits=2), backend)


SCALED_STEP = """
import torch

torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
scale = torch.tensor(1024.0)
growth = torch.tensor(0, dtype=torch.int32)

def f(x, y):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    (loss * scale).backward()
    found = torch.zeros(1)
    inv = scale.double().reciprocal().float()
    grads = [p.grad for p in model.parameters()]
    torch._amp_foreach_non_finite_check_and_unscale_(grads, found, inv)
    torch._amp_update_scale_(scale, growth, found, 2.0, 0.5, 3)
    if found.item() == 0:
        opt.step()
    return loss.detach(), scale.clone()
"""


def _batch(env):
    return (torch.randn(8, 4), torch.randn(8, 1))


def _bad_batch(env):
    x = torch.randn(8, 4)
    x[1, 1] = float("inf")
    return x, torch.randn(8, 1)


@backends()
def test_a_hand_written_loss_scaler_step(backend):
    script = [*calls(4, _batch), Call(_bad_batch), *calls(4, _batch)]
    watch = lambda env: (env.ns.scale.clone(), env.ns.growth.clone())
    case = Case("scaled_step", prog(SCALED_STEP), script, min_hits=3, watch=watch)
    run_case(case, backend)


GRAD_SET_TO_NONE = """
import torch

torch.manual_seed(0)
w = torch.randn(4, requires_grad=True)

def f(x):
    w.grad = None
    loss = (w * x).sum()
    loss.backward()
    with torch.no_grad():
        w.sub_(0.1 * w.grad)
    return loss.detach()
"""


@backends()
def test_a_gradient_set_to_none_before_backward(backend):
    """F383: ``w.grad = None`` before ``backward()``: the mock stored the gradient
    backward made later (``setattr(w, 'grad', c1)`` before ``c1`` existed: every replay
    raised inside the mock and was run again)."""
    watch = lambda env: (env.ns.w.detach().clone(), env.ns.w.grad)
    vector = lambda env: (torch.randn(4),)
    run_case(
        Case("grad_none", prog(GRAD_SET_TO_NONE), calls(5, vector), min_hits=3, watch=watch),
        backend,
    )
