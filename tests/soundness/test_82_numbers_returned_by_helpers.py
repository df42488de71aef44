"""Class 82: numbers that vary, returned by the program's helper functions.

Found by the seventeenth session's realistic-programs probe (F330): ``lr =
get_lr(step)``, ``coef = ent_schedule(i)``, ``x, lam = mixup_data(x, y)`` (a
``np.random.beta`` draw returned in a tuple).  The helper's result was guarded
by value at its return (a condition such as ``(STEP / 10) == 0.7``), so a
schedule that moves every call, or a draw, made a record per call and never
replayed; the same expression written inline replayed.  A number a callee
returns to the call that called it keeps its symbol now, and so do the items of
a tuple or list unpacked where the run built it.  What the caller gets must be
the object the callee returned (a wrapper that makes another number of it is
guarded by value).
"""

from __future__ import annotations

from functools import partial

import pytest
import torch
from harness import Call, Case, backends, calls, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="returns82")

PROGRAMS = {
    "schedule_helper": """
import math

import torch

STEP = 0

def get_lr(step, warmup=3, total=40):
    if step < warmup:
        return 0.1 * (step + 1) / warmup
    return 0.05 * (1 + math.cos(math.pi * step / total))

def f(x):
    global STEP
    lr = get_lr(STEP)
    STEP += 1
    return x * lr
""",
    "draw_returned_in_a_tuple": """
import numpy as np
import torch

LAMS = []

def mixup_data(x, alpha):
    lam = np.random.beta(alpha, alpha)
    return lam * x + (1 - lam) * x.flip(0), lam

def f(x):
    x, lam = mixup_data(x, 0.4)
    LAMS.append(float(lam))
    return x * 2
""",
    "decorated_helper_changes_the_number": """
import functools

import torch

STEP = 0

def doubled(fn):
    @functools.wraps(fn)
    def wrapper(step):
        return 2 * fn(step)
    return wrapper

@doubled
def scale(step):
    return step / 10

def f(x):
    global STEP
    s = scale(STEP)
    STEP += 1
    return x * s
""",
    "generator_return_value": """
import torch

STEP = 0

def inner(step):
    yield step
    return step * 3

def outer(step):
    got = yield from inner(step)
    return got + 1

def f(x):
    global STEP
    gen = outer(STEP)
    first = next(gen)
    try:
        next(gen)
    except StopIteration as stop:
        last = stop.value
    STEP += 1
    return x * first + last
""",
}


def _state(env):
    return (getattr(env.ns, "STEP", None), list(getattr(env.ns, "LAMS", [])))


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@backends(inductor=True)
def test_a_number_a_helper_returns(name, backend):
    if backend == "inductor" and name != "schedule_helper":
        pytest.skip("one Inductor program")
    replays = {"generator_return_value": 0}.get(name, 4)
    case = Case(
        name, prog(PROGRAMS[name]), calls(8, lambda env: (torch.randn(4),)),
        watch=_state, min_hits=replays,
    )  # fmt: skip
    run_case(case, backend)


FINITE_CHECK = """
import math

import torch

SKIPPED = []

def f(x):
    loss = (x * x).mean()
    value = loss.item()
    if not math.isfinite(value):  # a diverged step is skipped
        SKIPPED.append(value)
        return None
    return loss * 2, value
"""


def test_a_finite_check_of_a_loss_value():
    # F336: ``math.isfinite(v)`` of an ``.item()`` value pinned the value (a record
    # per call); its answer is the branch's condition now.
    values = [torch.randn(8) for _ in range(6)]
    values[3] = torch.full((8,), float("nan"))
    script = [Call(lambda env, v=v: (v.clone(),)) for v in [*values, *values[:3]]]
    watch = lambda env: list(env.ns.SKIPPED)
    run_case(Case("finite_check", prog(FINITE_CHECK), script, watch=watch, min_hits=4), "eager")
