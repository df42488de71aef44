"""Class 45: ``requires_grad_()`` and ``requires_grad=True`` inside a compiled graph.

The capture recorded ``t.requires_grad_()`` and factories called with
``requires_grad=True`` as graph nodes.  The eager backend runs them op by op, on
the real tensors, so they worked there; AOTAutograd and Inductor trace the
graph functionally, where the flag is meaningless: under Inductor a leaf made
inside (``y.detach().requires_grad_()``, ``torch.ones(4, requires_grad=True)``)
came back as a non-leaf of the compiled function, or not requiring grad at all
(the caller's backward raised, or its gradients went missing, also those of the
other outputs); ``x.requires_grad_()`` on an argument left the argument as it
was (``x.grad`` stayed None, and a gradient penalty's ``autograd.grad`` raised
on every replay, which never stuck); turning a parameter's flag off and back on
inside failed the record with an internal error.  Each such call is now made
between graphs, as an effectful callout the mock makes on every call (F160-F162):
the graph before it returns the tensor, the call makes it a leaf (or flags the
argument), and the graph after it is compiled for a tensor that requires grad.
``t.requires_grad = True`` (the property's setter) was dropped on a tensor the
function made, with both backends; it is now the same callout (F163).
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Case, backends, calls, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="grad45")


def plain_arg(env):
    env.x = torch.randn(3, 4)  # kept in the env: its requires_grad and .grad are compared
    return (env.x,)


def grad_arg(env):
    env.x = torch.randn(3, 4, requires_grad=True)
    return (env.x,)


def backward_all(env, result):
    loss = sum(t.sum() for t in result if t.requires_grad)
    loss.backward()


def backward(env, result):
    result.backward()


DETACHED_LEAF = """
import torch

lin = torch.nn.Linear(4, 4)

def f(x):
    y = lin(x)
    return y, y.detach().requires_grad_()
"""


@backends(inductor=True)
def test_a_detached_leaf_returned(backend):
    run_case(
        Case(
            "a_detached_leaf_returned",
            prog(DETACHED_LEAF),
            calls(4, grad_arg, then=backward_all),
            min_hits=3,
        ),
        backend,
    )


ARGUMENT_FLAGGED = """
import torch

lin = torch.nn.Linear(4, 2)

def f(x):
    x.requires_grad_()
    return lin(x).sum()
"""


@backends(inductor=True)
def test_requires_grad_on_an_argument(backend):
    run_case(
        Case(
            "requires_grad_on_an_argument",
            prog(ARGUMENT_FLAGGED),
            calls(4, plain_arg, then=backward),
            min_hits=3,
        ),
        backend,
    )


FACTORY_LEAF = """
import torch

def f(x):
    w = torch.ones(4, requires_grad=True)
    return (x * w).sum(), w
"""


@backends(inductor=True)
def test_a_leaf_made_by_a_factory(backend):
    run_case(
        Case(
            "a_leaf_made_by_a_factory",
            prog(FACTORY_LEAF),
            calls(4, plain_arg, then=lambda env, result: result[0].backward()),
            min_hits=3,
        ),
        backend,
    )


CLONED_LEAF = """
import torch

def f(x):
    w = (x * 2).detach().clone().requires_grad_()
    return (w * w).sum(), w
"""


@backends(inductor=True)
def test_a_leaf_made_by_clone(backend):
    run_case(
        Case(
            "a_leaf_made_by_clone",
            prog(CLONED_LEAF),
            calls(4, plain_arg, then=lambda env, result: result[0].backward()),
            min_hits=3,
        ),
        backend,
    )


GRADIENT_PENALTY = """
import torch

lin = torch.nn.Linear(4, 1)

def f(x):
    x.requires_grad_()
    out = lin(x).tanh()
    (g,) = torch.autograd.grad(out.sum(), x, create_graph=True)
    return g.pow(2).sum()
"""


@backends(inductor=True)
def test_a_gradient_penalty_replays(backend):
    """Each replay raised inside the mock and ran again: no call ever replayed."""
    run_case(
        Case(
            "a_gradient_penalty_replays",
            prog(GRADIENT_PENALTY),
            calls(4, plain_arg),
            min_hits=3,
        ),
        backend,
    )


BIAS_OFF_AND_ON = """
import torch

lin = torch.nn.Linear(4, 2)

def f(x):
    lin.bias.requires_grad_(False)
    out = lin(x) * 2
    lin.bias.requires_grad_(True)
    return out.sum()
"""


@backends(inductor=True)
def test_a_parameter_flag_turned_off_and_on(backend):
    """The record failed with an internal error under Inductor."""
    run_case(
        Case(
            "a_parameter_flag_turned_off_and_on",
            prog(BIAS_OFF_AND_ON),
            calls(4, plain_arg, then=backward),
            min_hits=3,
        ),
        backend,
    )


FLAG_STORED = """
import torch

def f(x):
    w = torch.zeros(4)
    w.requires_grad = True
    return (x * w).sum(), w
"""


@backends(inductor=True)
def test_the_flag_stored_as_an_attribute(backend):
    run_case(
        Case(
            "the_flag_stored_as_an_attribute",
            prog(FLAG_STORED),
            calls(4, plain_arg, then=lambda env, result: result[0].backward()),
            min_hits=3,
        ),
        backend,
    )


ARGUMENT_FLAG_STORED = """
import torch

lin = torch.nn.Linear(4, 2)

def f(x):
    x.requires_grad = True
    return lin(x * 2).sum()
"""


@backends(inductor=True)
def test_the_flag_stored_on_an_argument(backend):
    run_case(
        Case(
            "the_flag_stored_on_an_argument",
            prog(ARGUMENT_FLAG_STORED),
            calls(4, plain_arg, then=backward),
            min_hits=3,
        ),
        backend,
    )


RANDOM_LEAF_BETWEEN_DRAWS = """
import torch

def f(x):
    a = torch.randn(4)
    w = torch.randn(4, requires_grad=True)
    b = torch.rand(4)
    return (x * w + a).sum() * b.sum(), w
"""


@backends(inductor=True)
def test_a_random_leaf_between_draws(backend):
    """The draw made between graphs keeps its place in the generator's sequence."""
    run_case(
        Case(
            "a_random_leaf_between_draws",
            prog(RANDOM_LEAF_BETWEEN_DRAWS),
            calls(4, plain_arg, then=lambda env, result: result[0].backward()),
            min_hits=3,
        ),
        backend,
    )


TENSOR_LITERAL_LEAF = """
import torch

def f(x):
    v = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    return (x * v).sum(), v
"""


@backends(inductor=True)
def test_a_leaf_made_by_torch_tensor(backend):
    run_case(
        Case(
            "a_leaf_made_by_torch_tensor",
            prog(TENSOR_LITERAL_LEAF),
            calls(4, plain_arg, then=lambda env, result: result[0].backward()),
            min_hits=3,
        ),
        backend,
    )


PARAMETER_MADE_INSIDE = """
import torch

def f(x):
    w = torch.nn.Parameter(x.mean(0) * 2)
    return (x * w).sum(), w
"""


@backends(inductor=True)
def test_a_parameter_made_inside(backend):
    """Right before too (not recorded: the parameter's origin is not traced); kept so
    that it stays right."""
    run_case(
        Case(
            "a_parameter_made_inside",
            prog(PARAMETER_MADE_INSIDE),
            calls(4, plain_arg, then=lambda env, result: result[0].backward()),
        ),
        backend,
    )


FLAG_ON_A_NON_LEAF = """
import torch

def f(x):
    y = x * 2
    try:
        y.requires_grad_(False)
    except RuntimeError:
        y = y.detach() + 1
    return y.sum()
"""


@backends(inductor=True)
def test_the_flag_turned_off_on_a_non_leaf(backend):
    """The call raises in the program (and in the mock, caught the same way); right
    before too, kept so that it stays right."""
    run_case(
        Case("the_flag_turned_off_on_a_non_leaf", prog(FLAG_ON_A_NON_LEAF), calls(4, grad_arg)),
        backend,
    )


MISS_AFTER_THE_FLAG = """
import torch

def f(x):
    w = torch.rand(4, requires_grad=True)
    v = x.mean(0).detach()
    v.requires_grad_()
    x.requires_grad_()
    s = (x * w).sum() + (v * v).sum() * 0.01
    n = 2 if s.item() > 0 else 3
    return s * n, w, v, [n] * n
"""


@backends(inductor=True)
def test_a_replay_that_misses_after_the_flag(backend):
    """The replay flags its own tensors, then misses at the read: the monitoring run
    that follows makes the calls again on its own tensors."""

    def signed(sign):
        def make(env):
            env.x = torch.rand(3, 4) * sign
            return (env.x,)

        return make

    run_case(
        Case(
            "a_replay_that_misses_after_the_flag",
            prog(MISS_AFTER_THE_FLAG),
            [
                *calls(2, signed(1), then=lambda env, result: result[0].backward()),
                *calls(2, signed(-1), then=lambda env, result: result[0].backward()),
                *calls(2, signed(1), then=lambda env, result: result[0].backward()),
            ],
            min_hits=2,
        ),
        backend,
    )


FLAG_ALREADY_SET = """
import torch

pe = torch.randn(1, 8, 4)

def f(x):
    y = x + pe[:, : x.size(1)].requires_grad_(False)
    y.requires_grad_(x.requires_grad)
    return y.sum()
"""


@backends(inductor=True)
def test_the_flag_a_tensor_already_has(backend):
    """A no-op on a tensor the graph made: it stays in the graph (no split), for arguments
    with and without grad.  Right before too: it guards the fix's shortcut."""
    run_case(
        Case(
            "the_flag_a_tensor_already_has",
            prog(FLAG_ALREADY_SET),
            [
                *calls(2, lambda env: (torch.randn(1, 8, 4),)),
                *calls(3, lambda env: (torch.randn(1, 8, 4, requires_grad=True),), then=backward),
            ],
            min_hits=3,
        ),
        backend,
    )
