"""Class 76: a number whose Python type depends on its value.

Found by the sixteenth session's symbolic-arithmetic probe (F315): ``max(t, 0)``,
``min(1, step / 3)`` (a warmup factor) and ``base ** e`` of ints are an int or a
float depending on the numbers.  A lifted number enters a graph as a 0-d tensor
whose dtype the record fixed from the recorded call's value: a replay where the
other type won multiplied an int64 tensor by a float (float32 where eager gives
int64), or made ``1 / 3`` a float32 (a float64 tensor lost its precision).  Which
operand wins, and the exponent's sign, are conditions of the record now.
"""

from __future__ import annotations

from functools import partial

import pytest
import torch
from harness import Call, Case, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="types76")

PROGRAMS = {
    "max_with_an_int": (
        "def f(ids, t):\n    return ids * max(t, 0)\n",
        [1.5, 0.5, -2.5, 3.0, -1.0],
    ),
    "warmup_factor": ("def f(x, step):\n    return x * min(1, step / 3)\n", [8, 6, 1, 2, 4, 9]),
    "int_power": ("def f(x, e):\n    return x * 3 ** e\n", [3, 2, -1, 4, -2, 1]),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_number_whose_type_the_values_decide(name):
    source, values = PROGRAMS[name]
    dtype = torch.int64 if name == "max_with_an_int" else torch.float64

    def arguments(v):
        return lambda env: (torch.arange(3).to(dtype), v)

    script = [Call(arguments(v), label=f"{v}") for v in values]
    run_case(Case(name, prog("import torch\n\n" + source), script), "eager")


SIZE_IN_A_NAMEDTUPLE = """
from typing import NamedTuple

import torch

class Out(NamedTuple):
    y: torch.Tensor
    shape: torch.Size

def f(x):
    return Out(x * 2, x.shape)
"""


def test_a_size_returned_in_a_namedtuple_while_sizes_vary():
    # F316: once sizes were followed, the run handed the program the namedtuple with
    # a plain tuple for its torch.Size (``out.shape.numel()`` raised).
    script = [Call(lambda env, t=t: (torch.randn(2, t),)) for t in (5, 6, 7, 8, 6)]
    run_case(Case("size_in_namedtuple", prog(SIZE_IN_A_NAMEDTUPLE), script), "eager")


ITERATED = {
    "set_argument": ("def f(x, s):\n    return x * min(s)\n", lambda v: set(v)),
    "deque_argument": (
        "def f(x, q):\n    return x * sum(q)\n",
        lambda v: __import__("collections").deque(v),
    ),
    "dict_keys": ("def f(x, d):\n    return x * max(d)\n", lambda v: dict.fromkeys(v, "a")),
}


@pytest.mark.parametrize("name", sorted(ITERATED))
def test_an_int_that_becomes_a_float_inside_an_iterated_container(name):
    # F332: the items of a set, deque or dict's keys were guarded as ``tuple(S) ==
    # (1, 2)``, which ``(1.0, 2)`` passes: the replay multiplied by an int (int64
    # where eager's float makes float32).
    source, make = ITERATED[name]
    script = [
        Call(lambda env, v=v: (torch.arange(3), make(v)), label=repr(v))
        for v in ((1, 2), (1, 2), (1.0, 2), (1.0, 2), (1, 2))
    ]
    run_case(Case(name, prog("import torch\n\n" + source), script, min_hits=2), "eager")


def test_a_numpy_function_of_a_number_that_varies():
    # F337: ``x * np.sqrt(s)`` made an np.float64 of a lifted number that no graph took:
    # "cannot replay", and after four such calls the function was never compiled.
    source = "import numpy as np\nimport torch\n\ndef f(x, s):\n    return x * np.sqrt(s)\n"
    script = [
        Call(lambda env, s=s: (torch.ones(3), s), label=repr(s))
        for s in (2.0, 3.0, 5.0, 7.0, 2.0, 3.0, 5.0)
    ]
    run_case(Case("numpy_sqrt", prog(source), script, min_hits=2), "eager")
