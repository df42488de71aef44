"""Class 46: autograd history a library's custom Function gives, and stores of ``.grad``
replayed before the callouts that come after them.

What was wrong:

* ``torch.utils.checkpoint(block, x, use_reentrant=True)`` (both backends): torch's
  ``CheckpointFunction`` runs ``block`` under ``no_grad``, in torch's own Python,
  which the monitor does not step into: the capture recorded ``block``'s ops
  grad-less, and ``apply`` then gave those same tensors the checkpoint's backward.
  The replay's graph returned them with no history: ``loss.backward()`` reached
  neither ``block``'s parameters nor ``x`` (no error, gradients None).  The same
  for any custom Function torch's Python applies (``nn.CrossMapLRN2d``).  The
  capture now notes whether each tensor it binds requires grad; a tensor that
  requires grad when it is used later, though its node does not give it, refuses
  the record by name (FG209, ``capture/history.py``).  The program runs eagerly.
* ``if w.grad is None: w.grad = zeros_like(w)`` then ``w.grad += x``: the mock
  stored ``w.grad`` before the next read of it, but named the tensor by the origin
  it had at the end of the run (the last read's result, not made yet there): every
  replay raised UnboundLocalError, the call ran again, and a record was added per
  call.  A store before a callout now names its tensors as they were then (the
  tape keeps each tensor's earlier origins, ``history.Producers``).
* A callout's result (``g = w.grad``) updated in place, then again after a read
  of its data that ends the graph: the second update went into the first graph's
  output, not into ``w.grad`` (a wrong gradient), and a store of it replaced
  ``w.grad`` with another object.  A callout's result updated in place now stays
  that object, as an outside tensor does: each graph's update is written back
  into it (F172).
"""

from __future__ import annotations

import torch
from harness import Call, Case, Do, backends, calls, prog, run_case

REENTRANT = """
import torch
from torch.utils.checkpoint import checkpoint

lin = torch.nn.Linear(4, 4)
head = torch.nn.Linear(4, 1)

def block(h):
    return lin(h).relu()

def f(x):
    return head(checkpoint(block, x, use_reentrant=True))

def g(x):
    return checkpoint(block, x, use_reentrant=True)   # returned as it is
"""


def _x(env):
    return (torch.randn(2, 4, requires_grad=True),)


def _backward(env, result):
    result.sum().backward()


def _zero(env):
    env.ns.lin.zero_grad()
    if hasattr(env.ns, "head"):
        env.ns.head.zero_grad()


def _steps(n=3):
    steps = []
    for _ in range(n):
        steps += [Do(_zero, "zero_grad"), Call(_x, then=_backward)]
    return steps


def _grads(env):
    return (env.ns.lin.weight.grad, env.ns.lin.bias.grad, env.ns.head.weight.grad)


@backends(inductor=True)
def test_reentrant_checkpoint_keeps_its_backward(backend):
    run_case(
        Case("reentrant_checkpoint", prog(REENTRANT, "f", "ckpt46"), _steps(), watch=_grads),
        backend,
    )


@backends(inductor=True)
def test_reentrant_checkpoint_returned(backend):
    run_case(
        Case(
            "reentrant_checkpoint_returned", prog(REENTRANT, "g", "ckpt46"), _steps(), watch=_grads
        ),
        backend,
    )


LRN = """
import torch

lin = torch.nn.Linear(3, 3)
lrn = torch.nn.CrossMapLRN2d(3)   # its forward applies a custom Function of torch's own

def f(x):
    return lrn(lin(x)).sum() * 2
"""


@backends()
def test_custom_function_torch_applies(backend):
    def arg(env):
        return (torch.randn(1, 4, 3, 3, requires_grad=True),)

    steps = []
    for _ in range(3):
        steps += [Do(_zero, "zero_grad"), Call(arg, then=lambda env, result: result.backward())]
    run_case(
        Case(
            "cross_map_lrn",
            prog(LRN, "f", "lrn46"),
            steps,
            watch=lambda env: (env.ns.lin.weight.grad, env.ns.lin.bias.grad),
        ),
        backend,
    )


INPLACE_HISTORY = """
import torch

w = torch.nn.Parameter(torch.ones(3))

def f(x):
    h = torch.zeros(3)
    h[0] = (w * x).sum()   # h gets history from an op the capture recorded (CopySlices)
    v = torch.zeros(4)
    v[:3].add_(w)          # and v through its view
    return (h * 2).sum() + v.sum()
"""


@backends()
def test_history_from_recorded_inplace_ops_still_replays(backend):
    """The check of F170 looks only at a custom Function's backward: history an
    in-place op the graph itself makes gives is not refused."""

    def reset(env):
        env.ns.w.grad = None

    steps = []
    for _ in range(4):
        steps += [Do(reset, "w.grad = None"), Call(_x3, then=lambda env, r: r.backward())]
    run_case(
        Case(
            "inplace_history",
            prog(INPLACE_HISTORY, "f", "inplace46"),
            steps,
            watch=lambda env: env.ns.w.grad,
            min_hits=3,
        ),
        backend,
    )


def _x3(env):
    return (torch.randn(3),)


GRAD_STORE = """
import torch

w = torch.zeros(4, requires_grad=True)

def f(x):
    if w.grad is None:
        w.grad = torch.zeros_like(w)
    w.grad += x
    return w.grad.sum()
"""


def _reset(env):
    env.ns.w.grad = None


@backends(inductor=True)
def test_grad_set_then_accumulated(backend):
    def vec(env):
        return (torch.randn(4),)

    steps = [
        *calls(3, vec),
        Do(_reset, "w.grad = None"),
        *calls(3, vec),
        Do(_reset, "w.grad = None"),
        *calls(2, vec),
    ]
    run_case(
        Case(
            "grad_set_then_accumulated",
            prog(GRAD_STORE, "f", "gradstore46"),
            steps,
            watch=lambda env: env.ns.w.grad,
            min_hits=5,
        ),
        backend,
    )


GRAD_UPDATED_ACROSS_A_READ = """
import torch

w = torch.zeros(4, requires_grad=True)
w.grad = torch.zeros(4)
held = [w.grad]    # the program keeps the gradient tensor itself

def f(x):
    g = w.grad
    g += x
    if g.sum().item() > 1e6:   # a read of g's data: the graph ends here
        return g.sum()
    g += x
    return g.sum()
"""


@backends(inductor=True)
def test_grad_updated_in_place_across_a_read(backend):
    def vec(env):
        return (torch.randn(4),)

    run_case(
        Case(
            "grad_updated_across_a_read",
            prog(GRAD_UPDATED_ACROSS_A_READ, "f", "gradread46"),
            calls(4, vec),
            watch=lambda env: (env.ns.w.grad, env.ns.held[0], env.ns.held[0] is env.ns.w.grad),
            min_hits=3,
        ),
        backend,
    )
