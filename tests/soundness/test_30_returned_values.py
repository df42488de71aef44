"""Class 30: Python values a replay computes again, returned inside containers.

``return loss.item(), acc`` is the common end of a training step: the tuple
holds a value read from the graph (a callout) next to plain constants.  A
tuple of literals was rendered as a literal in the mock, so the first call's
loss came back on every replay.  Each program returns such values in tuples,
nested tuples, lists in tuples, dicts in tuples, with data that changes every
call; the replays must return this call's values.
"""

from __future__ import annotations

from functools import partial

import pytest
import torch
from harness import Case, backends, calls, load_program, run_case
from harness import prog as shared_prog

import fullgraph.runtime as fr

prog = partial(shared_prog, name="returned30")


def counting(env):
    env.ns.CALLS[0] += 1
    return (torch.full((3,), float(env.ns.CALLS[0])),)


RETURNS = {
    "item_alone_in_a_tuple": "(x.sum().item(),)",
    "item_beside_a_constant": "(x.sum().item(), 1)",
    "two_items": "(x.sum().item(), x.mean().item() * 2)",
    "nested_tuple": "((x.sum().item(), 1), 2)",
    "list_in_a_tuple": "([x.sum().item()], 1)",
    "dict_in_a_tuple": "({'loss': x.sum().item()}, 'ok')",
    "item_arithmetic": "(x.sum().item() + 1,)",
    "int_of_item": "(int(x.sum().item()),)",
    "float_of_tensor": "(float(x.sum()),)",
    "tolist": "(x.tolist(),)",
    "item_and_shape": "(x.sum().item(), x.shape)",
}


@backends()
@pytest.mark.parametrize("name", sorted(RETURNS))
def test_a_value_read_from_the_graph_is_returned_fresh(backend, name):
    source = f"import torch\nCALLS = [0]\n\ndef f(x):\n    return {RETURNS[name]}\n"
    run_case(Case(f"returned_{name}", prog(source), calls(4, counting), min_hits=3), backend)


TRAIN_STEP = """
import torch

model = torch.nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
CALLS = [0]

def step(x):
    optimizer.zero_grad()
    out = model(x)
    loss = out.pow(2).mean()
    loss.backward()
    optimizer.step()
    return loss.item(), out.dtype
"""


@backends()
def test_a_training_step_returns_this_steps_loss(backend):
    run_case(
        Case(
            "a_training_step_returns_this_steps_loss",
            prog(TRAIN_STEP, "step"),
            calls(5, lambda env: (torch.randn(4, 3),)),
            min_hits=3,
        ),
        backend,
    )


MADE_CALLABLES = """
import functools
import torch

def closure_over_argument(x):
    return lambda: (x * 2).sum()

def closure_over_result(x):
    y = x * 2
    def inner(z):
        return z + y
    return inner

def partial_over_result(x):
    return functools.partial(torch.add, x * 2)

def bound_method_of_result(x):
    return (x * 2).add
"""


@pytest.mark.parametrize(
    "name",
    [
        "closure_over_argument",
        "closure_over_result",
        "partial_over_result",
        "bound_method_of_result",
    ],
)
def test_a_callable_the_function_makes_holds_this_calls_values(name):
    # the mock handed out the first call's function (holding the first call's tensors)
    compiled = fr.compile(getattr(made_callables, name), backend="eager")
    for i in range(3):
        x = torch.full((2,), float(i))
        made = compiled(x)
        expected = getattr(made_callables, name)(x)
        args = () if name == "closure_over_argument" else (torch.ones(2),)
        assert torch.equal(made(*args), expected(*args)), f"call {i}"


made_callables = load_program(MADE_CALLABLES, "made_callables30")
