"""Class 83: a library object read after a replayed call changed it.

Found by the seventeenth session's adversarial probe (F333): ``Q.put(v)`` then
``Q.unfinished_tasks``, ``L.setLevel(L.level + 10)`` then ``L.level``,
``SEM.release()`` then ``SEM._value``.  The read came after the call, which the
mock replays; the guard checked the value at entry against what the run read
after the call (the previous call's result passes it), and the mock used the
recorded number.  A read through an object of a library class after a replayed
call on such an object is not recorded now (those calls run eagerly); a log
call shows its arguments only and changes nothing.
"""

from __future__ import annotations

from functools import partial

import pytest
import torch
from harness import Case, calls, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="reads83")

PROGRAMS = {
    "queue_then_its_count": """
import queue

import torch

Q = queue.Queue()
LOG = []

def f(x):
    Q.put(x.sum())
    LOG.append(Q.unfinished_tasks)
    return x * 2
""",
    "logger_level_raised": """
import logging

import torch

L = logging.Logger("reads83")  # one per twin (getLogger would share it)
LOG = []

def f(x):
    L.setLevel(L.level + 10)
    LOG.append(L.level)
    return x * 2
""",
    "log_call_then_a_read": """
import logging

import torch

L = logging.Logger("reads83.info")
LOG = []

def f(x):
    L.info("step %s", 1)
    LOG.append(L.name)
    return x * 2
""",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_read_after_a_replayed_call_on_the_object(name):
    replays = 2 if name == "log_call_then_a_read" else 0
    case = Case(
        name, prog(PROGRAMS[name]), calls(5, lambda env: (torch.randn(3),)),
        watch=lambda env: list(env.ns.LOG), min_hits=replays,
    )  # fmt: skip
    run_case(case, "eager")
