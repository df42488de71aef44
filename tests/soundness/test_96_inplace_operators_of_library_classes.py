"""Class 96: in-place operators of library classes on objects from outside (found 2026-12-07).

F360 (object-model probe of the eighteenth session): ``layers += [extra]`` on an
``nn.ModuleList`` and ``A += array.array("d", [2.0])`` on an ``array.array`` call
the class's ``__iadd__`` (torch's Python, C), which the interpreter runs itself:
no store was recorded and nothing refused, so replays left the list as the first
call found it (``len(layers)`` and the result a call behind eager's).  Such an
operator on an object from outside is refused now: the calls run eagerly.  The
program's own ``__iadd__`` is stepped into as before, and ``+=`` on a number still
rebinds the name (a test keeps that replaying).
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Case, backends, calls, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="inplace96")


def _vector(env):
    return (torch.randn(3),)


MODULE_LIST = """
import torch

layers = torch.nn.ModuleList([torch.nn.Linear(3, 3)])
extra = torch.nn.Linear(3, 3)

def f(x):
    global layers
    layers += [extra]
    for layer in layers:
        x = layer(x)
    return x, len(layers)
"""


@backends()
def test_a_module_list_extended_with_plus_equals(backend):
    watch = lambda env: len(env.ns.layers)
    run_case(Case("module_list", prog(MODULE_LIST), calls(4, _vector), watch=watch), backend)


ARRAY = """
import array
import torch

A = array.array("d", [1.0])

def f(x):
    global A
    A += array.array("d", [2.0])
    return x * len(A)
"""


@backends()
def test_an_array_array_extended_with_plus_equals(backend):
    watch = lambda env: list(env.ns.A)
    run_case(Case("array", prog(ARRAY), calls(4, _vector), watch=watch), backend)


PROGRAM_IADD = """
import torch

class Meter:
    def __init__(self):
        self.total = 0.0

    def __iadd__(self, value):
        self.total += value
        return self

meter = Meter()
step = 0

def f(x):
    global meter, step
    meter += 1.0
    step += 1
    return x * 2
"""


@backends()
def test_the_programs_own_iadd_and_a_number_still_replay(backend):
    watch = lambda env: (env.ns.meter.total, env.ns.step)
    case = Case("program_iadd", prog(PROGRAM_IADD), calls(4, _vector), min_hits=2, watch=watch)
    run_case(case, backend)
