"""Class 73: a slot stored through one name and read through another.

Found by the sixteenth session's Python-semantics probe (F304): an attribute is an
item of its object's ``__dict__`` and a global an attribute of its module, so a
store through one name and a read through the other (``cfg = vars(args);
cfg["lr"] *= 0.5; return x * args.lr``) read the same slot.  The read was taken
for a read of the state the call found (guarded at entry, the first call's value
replayed) instead of the value the call stored.
"""

from __future__ import annotations

import collections
import types
from functools import partial

import pytest
import torch
from harness import Case, calls, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="slot73")

HEADER = """
import argparse
import sys
import torch

class Options:
    def __init__(self):
        self.a = 1.0

OBJ = Options()
ARGS = argparse.Namespace(lr=1.0)
K = 1.0
"""

BODIES = {
    "dict_store_attribute_read": 'vars(OBJ)["a"] = vars(OBJ)["a"] + 1\n    return x * OBJ.a',
    "attribute_store_dict_read": 'OBJ.a = OBJ.a + 1\n    return x * vars(OBJ)["a"]',
    "dunder_dict_store": 'OBJ.__dict__["a"] += 1\n    return x * OBJ.a',
    "global_store_module_read": "global K\n    K = K + 1\n    return x * sys.modules[__name__].K",
    "argparse_vars": 'cfg = vars(ARGS)\n    cfg["lr"] *= 0.5\n    return x * ARGS.lr',
}


@pytest.mark.parametrize("name", sorted(BODIES))
def test_a_store_through_one_name_read_through_the_other(name):
    source = HEADER + f"\ndef f(x):\n    {BODIES[name]}\n"
    watch = lambda env: (dict(vars(env.ns.OBJ)), vars(env.ns.ARGS), env.ns.K)
    script = calls(5, lambda env: (torch.randn(3),))
    run_case(Case(name, prog(source), script, watch=watch, min_hits=2), "eager")


# F307: a name absent when the call was recorded was not guarded as absent.
ABSENT_NAMES = {
    "optional_global": (
        "def f(x):\n    try:\n        s = SCALE\n    except NameError:\n        s = 1.0\n"
        "    return x * s\n"
    ),
    "deleted_global": (
        "TMP = 1.0\n\ndef f(x):\n    global TMP\n    try:\n        y = x * TMP\n        del TMP\n"
        "    except NameError:\n        TMP = 2.0\n        y = x\n    return y\n"
    ),
    "empty_closure_cell": (
        "def make():\n    def g(t):\n        try:\n            return t * k\n"
        "        except NameError:\n            return t\n    def setk(v):\n        nonlocal k\n"
        "        k = v\n    return g, setk\n    k = 0\n\nG, SETK = make()\n\n"
        "def f(x):\n    return G(x)\n\ndef SCALE_UP():\n    SETK(3.0)\n"
    ),
}


@pytest.mark.parametrize("name", sorted(ABSENT_NAMES))
def test_a_name_absent_when_recorded_is_defined_later(name):
    from harness import Do

    def define(env):
        if name == "empty_closure_cell":
            env.ns.SCALE_UP()
        elif name == "optional_global":
            env.ns.SCALE = 3.0

    source = "import torch\n\n" + ABSENT_NAMES[name]
    step = lambda env: (torch.randn(3),)
    script = [*calls(3, step), Do(define, "define it"), *calls(3, step)]
    watch = lambda env: getattr(env.ns, "TMP", None)
    run_case(Case(name, prog(source), script, watch=watch), "eager")


# F311: a key deleted and stored again (or moved) goes to the end of the caller's
# dict; the replay stored the final value in place.
KEY_ORDER = {
    "delete_and_store": 'ids = b["input_ids"]\n    del b["input_ids"]\n    b["input_ids"] = ids * 2',
    "move_to_end": 'b.move_to_end("input_ids")',
    "namespace_attribute": "n.x = n.x\n    del n.x\n    n.x = 1.0",
}


@pytest.mark.parametrize("name", sorted(KEY_ORDER))
def test_a_key_moved_to_the_end_of_the_callers_dict(name):
    source = (
        "import collections\nimport types\nimport torch\n\n"
        f"def f(x, b, n):\n    {KEY_ORDER[name]}\n    return x + 1\n"
    )

    def arguments(env):
        b = collections.OrderedDict(input_ids=torch.ones(2), mask=torch.zeros(2))
        n = types.SimpleNamespace(x=0.0, y=1.0)
        env.b, env.n = b, n
        return (torch.randn(2), b, n)

    watch = lambda env: (list(env.b), list(vars(env.n)))
    run_case(Case(name, prog(source), calls(4, arguments), watch=watch), "eager")
