"""Class 34: Python constructs whose reads run in C, on what comes from outside.

``match`` statements (class, mapping and sequence patterns), star-unpacking
(``first, *rest = xs``), containers as operands (``xs + [9.0]``,
``opts == ["fast"]``, ``d | extra``), ``sum(d.values())``, ``t.extend(xs)``,
``list(reversed(xs))``, ``dict(zip(keys, xs))``, and a negative
constant as a base of ``**`` with a number that varies.  Each program is
called, the container or object it reads is changed between calls, and called
again: the replay must see the change, unchanged calls must replay.
"""

from __future__ import annotations

from functools import partial

import pytest
import torch
from harness import Case, backends, calls, execg, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="constructs34")

HEADER = """
from dataclasses import dataclass
import torch

@dataclass
class P:
    a: int
    b: float

XS = [1.0, 2.0]
D = {"k": 1.0}
S = {1}
OPTS = ["fast"]
OBJ = P(0, 1.0)
"""

CHANGE = (
    "XS[:] = [3.0, 2.0, 5.0]; D['k'] = 2.0; D['j'] = 4.0; S.add(2); OPTS[0] = 'slow'; OBJ.a = 3"
)

PROGRAMS = {
    "star_unpacking": "first, *rest = XS\n    return x * first, len(rest)",
    "star_unpacking_last": "*init, last = XS\n    return x * last, len(init)",
    "list_plus_list": "return x * len(XS + [9.0]), (XS * 2)[-1]",
    "list_compared": "return x * (2.0 if OPTS == ['fast'] else 3.0)",
    "dict_merged": "return x * len(D | {'z': 0.0})",
    "set_compared": "return x * (1.0 if S == {1} else 4.0)",
    "sum_of_dict_values": "return x * sum(D.values()), list(D.items())",
    "list_extended": "t = []\n    t.extend(XS)\n    return x * t[-1]",
    "list_of_reversed": "return x * list(reversed(XS))[0]",
    "dict_of_zip": "return x * dict(zip('abc', XS))['a']",
    "list_of_enumerate": "return x * list(enumerate(XS))[-1][1]",
    "match_sequence": (
        "match XS:\n        case [a, *rest]:\n            return x * a, len(rest)\n    return None"
    ),
    "match_mapping": (
        "match D:\n        case {'j': v}:\n            return x * v\n"
        "        case {'k': v}:\n            return x - v\n    return None"
    ),
    "match_class": (
        "match OBJ:\n        case P(a=0, b=t):\n            return x + t\n"
        "        case P(a=n):\n            return x * n\n    return None"
    ),
}


@backends()
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_construct_reading_in_c_is_guarded(backend, name):
    source = HEADER + f"\ndef f(x):\n    {PROGRAMS[name]}\n"
    run_case(
        Case(
            f"construct_{name}",
            prog(source),
            [
                *calls(3, lambda env: (torch.ones(2),)),
                execg(CHANGE),
                *calls(3, lambda env: (torch.ones(2),)),
            ],
            min_hits=3,
        ),
        backend,
    )


NEGATIVE_BASE = """
import torch

BASE = -2.0

def f(x, n):
    return x * n, (-8.0) ** n, BASE ** n, max(n, float("-inf"))
"""


@backends()
def test_a_negative_base_with_a_number_that_varies(backend):
    values = [1, 1, 2, 3, 4, 0]
    run_case(
        Case(
            "negative_base_with_a_number_that_varies",
            prog(NEGATIVE_BASE),
            [step for n in values for step in calls(1, lambda env, n=n: (torch.ones(1), n))],
            min_hits=3,
        ),
        backend,
    )


ROUND_TRIP = """
import torch

def f(x, n):
    y = x * n  # n varies: it is lifted into the graph
    vals = [n, n]
    return y, vals[0] * 2, sum(vals), max([n, 3]), {"k": n}["k"] + 1, "%d-%d" % (n, n + 1)
"""


@backends()
def test_a_number_that_varies_read_back_from_a_container_the_function_built(backend):
    values = [1, 1, 2, 3, 5, 5]
    run_case(
        Case(
            "number_read_back_from_a_built_container",
            prog(ROUND_TRIP),
            [step for n in values for step in calls(1, lambda env, n=n: (torch.ones(1), n))],
        ),
        backend,
    )


SETTERS = """
import torch

class Scaled:
    @property
    def v(self):
        return self._v

    @v.setter
    def v(self, value):
        self._v = value * 2

class Logged:
    def __init__(self):
        object.__setattr__(self, "seen", [])

    def __setattr__(self, name, value):
        self.seen.append(name)
        object.__setattr__(self, name, value * 3)

s, log = Scaled(), Logged()

def f(x, n):
    y = x * n  # n varies: it is lifted into the graph
    s.v = n
    log.w = n
    return y * s.v, log.w
"""


@backends()
def test_a_number_that_varies_stored_through_user_code(backend):
    values = [1.0, 1.0, 2.0, 3.0, 5.0, 7.0, 7.0]
    run_case(
        Case(
            "number_stored_through_user_code",
            prog(SETTERS),
            [step for n in values for step in calls(1, lambda env, n=n: (torch.ones(1), n))],
            watch=lambda env: (env.ns.s._v, env.ns.log.w, list(env.ns.log.seen)),
            min_hits=2,
        ),
        backend,
    )


MATCH_ARGS = """
import torch

class Point:
    __match_args__ = ("a", "b")

    def __init__(self):
        self.a = 4
        self.b = 2

point = Point()

def f(x):
    match point:
        case Point(a, 2):
            return x + a
        case _:
            return x
"""


@backends()
def test_match_args_changed_on_the_class(backend):
    # ``case Point(a, 2)`` reads the attributes ``__match_args__`` names, in C (F219).
    run_case(
        Case(
            "match_args_changed_on_the_class",
            prog(MATCH_ARGS),
            [
                *calls(2, lambda env: (torch.ones(1),)),
                execg("Point.__match_args__ = ('b', 'a')"),
                *calls(2, lambda env: (torch.ones(1),)),
            ],
            min_hits=2,
        ),
        backend,
    )
