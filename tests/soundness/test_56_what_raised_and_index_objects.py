"""Class 56: numbers that decide whether something raised, and objects torch indexes with.

Found by the fourteenth session's probe of Python 3.12 / 3.13 bytecode (F252-F254):

- When an instruction raised, the monitor forgot every symbol on the frame's
  value stack.  On 3.12+ an inlined comprehension saves the outer local of the
  same name on the stack and puts it back in its exception handler: the local
  came back as a plain number, and a record for a number that varies between
  calls (a lifted argument, an ``.item()``) replayed the first call's value.
- An operation on such a number that raised and was caught (``10 // n``,
  ``x.view(n, -1)``, ``math.sqrt(n)``) left the record of the ``except`` path
  unguarded: later numbers that would not raise replayed it.
- An object with a Python ``__index__`` indexing a tensor (``x[I]``) was checked
  by identity only; torch asks it for its int in C.

Each case changes the number (or the object) between calls, taking both paths.
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Call, Case, backends, execg, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="raised56")


def with_number(*numbers):
    return [Call(lambda env, n=n: (torch.ones(2), n)) for n in numbers]


COMPREHENSION_RAISES = """
import torch

def f(x, n):
    k = n * 2
    try:
        ys = [1 // (k - 1) for k in range(3)]  # raises at k == 1
    except ZeroDivisionError:
        ys = []
    return x * k  # the outer k, put back by the comprehension's handler
"""

COMPREHENSION_RAISES_ITEM = """
import torch

def f(x, n):
    k = (x * n).sum().item()
    try:
        d = {k: int("q") for k in [0, 1]}
    except ValueError:
        d = {}
    return x * k
"""


@backends()
def test_a_comprehension_that_raises_gives_the_outer_local_back(backend):
    script = with_number(1, 2, 3, 4, 5)
    for name, source in (("list", COMPREHENSION_RAISES), ("dict_item", COMPREHENSION_RAISES_ITEM)):
        run_case(Case(f"comprehension_raises_{name}", prog(source), script, min_hits=2), backend)


FLOOR_DIVISION = """
import torch

def f(x, n):
    try:
        v = 10 // n
    except ZeroDivisionError:
        v = -1
    return x * v
"""

ITEM_DIVISION = """
import torch

def f(x, n):
    i = int((x * n).sum().item())
    try:
        v = 10 // i
    except ZeroDivisionError:
        v = -1
    return x * v
"""

VIEW = """
import torch

def f(x, n):
    x = torch.arange(6.0) + x.sum()
    try:
        y = x.view(n, -1)  # raises unless n divides 6
    except RuntimeError:
        y = x
    return y * 2
"""

SQRT = """
import math
import torch

def f(x, n):
    try:
        r = math.sqrt(n - 3)
    except ValueError:
        r = 0.0
    return x * r
"""


@backends()
def test_a_caught_exception_raised_by_a_varying_number(backend):
    script = with_number(1, 2, 0, 3, 5, 0, 4)
    for name, source in (
        ("floor_division", FLOOR_DIVISION),
        ("item_division", ITEM_DIVISION),
        ("view", VIEW),
        ("sqrt", SQRT),
    ):
        run_case(Case(f"caught_{name}", prog(source), script), backend)


INDEX_OBJECT = """
import torch

class Idx:
    def __init__(self, v):
        self.v = v

    def __index__(self):
        return self.v

I = Idx(1)

def f(x):
    y = torch.arange(6.0) + x.sum()
    z = y.clone()
    z[I] = 9.0
    return y[I] * 2, z, y.view(2, 3)[1, I]
"""

INDEX_OBJECT_SLICE = INDEX_OBJECT.replace("return y[I] * 2,", "return y[I:] * 2,")


def fresh(env):
    return (torch.randn(2),)


@backends()
def test_an_object_with_index_that_indexes_a_tensor(backend):
    script = [Call(fresh), Call(fresh), execg("I.v = 2"), Call(fresh), Call(fresh)]
    script += [execg("I = Idx(0)"), Call(fresh)]
    for name, source in (("index", INDEX_OBJECT), ("slice", INDEX_OBJECT_SLICE)):
        run_case(Case(f"index_object_{name}", prog(source), script, min_hits=2), backend)
