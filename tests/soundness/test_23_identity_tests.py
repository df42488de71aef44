"""Class 23: identity tests between objects from outside the call.

``a is b`` / ``a is not b`` between two arguments, two globals, an argument
and a module's attribute, items of an argument list, an argument and what
the program stored on its module in an earlier call (a memo).  One object
reached through two paths is guarded as an alias; two distinct objects must
be guarded to stay two, or the record made for distinct objects replays an
aliased call down the wrong branch (the newest record is tried first).
Calls alternate aliased and distinct so each record meets the other kind;
repeated calls of one kind must replay.
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Call, Case, Env, backends, calls, execg, run_case, setg, vec
from harness import prog as shared_prog

prog = partial(shared_prog, name="identity23")


def two(env):
    return torch.randn(4), torch.randn(4)


def same(env):
    t = torch.randn(4)
    return t, t


# --- `a is b` between two arguments --------------------------------------------

ARGS = """
import torch

def f(a, b):
    if a is b:
        return a * 2
    return a + b + 10
"""


@backends()
def test_arguments_aliased_then_distinct_then_aliased(backend):
    run_case(
        Case(
            "arguments_aliased_then_distinct_then_aliased",
            prog(ARGS),
            [
                *calls(2, same),
                *calls(2, two, label="distinct"),
                *calls(2, same, label="aliased again"),
                Call(two, label="distinct again"),
            ],
            min_hits=4,
            max_monitor_runs=2,
        ),
        backend,
    )


# --- `A is B` between two globals, B rebound between calls ---------------------

GLOBALS = """
import torch

A = torch.ones(4)
B = torch.full((4,), 3.0)

def f(x):
    if A is B:
        return x * A
    return x + A + B
"""


@backends()
def test_globals_rebound_to_one_object_and_apart(backend):
    run_case(
        Case(
            "globals_rebound_to_one_object_and_apart",
            prog(GLOBALS),
            [
                *calls(2, vec),
                setg("B", "A"),
                *calls(2, vec),
                setg("B", "torch.full((4,), 5.0)"),
                *calls(2, vec),
                setg("B", "A"),
                *calls(2, vec),
            ],
            min_hits=4,
            max_monitor_runs=2,
        ),
        backend,
    )


# --- a memo: `x is self.last_in`, last_in stored by the call itself ------------

MEMO = """
import torch

class Memo(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.last_in = None
        self.last_out = None

    def forward(self, x):
        if x is self.last_in:
            return self.last_out, True
        out = x * 2 + 1
        self.last_in = x
        self.last_out = out
        return out, False

memo = Memo()
A = torch.randn(4)
B = torch.randn(4)
"""


def arg(name):
    def pick(env):
        return (getattr(env.ns, name),)

    pick.__name__ = name
    return pick


@backends()
def test_memo_on_the_identity_of_the_last_input(backend):
    a, b = arg("A"), arg("B")
    run_case(
        Case(
            "memo_on_the_identity_of_the_last_input",
            prog(MEMO, "memo"),
            [
                Call(a, label="a: computed"),
                Call(a, label="a: memo hit"),
                Call(b, label="b: computed"),
                Call(a, label="a: computed again"),
                Call(a, label="a: memo hit"),
                Call(a, label="a: memo hit"),
                Call(b, label="b: computed"),
            ],
            min_hits=3,
        ),
        backend,
    )


# --- `is not` between consecutive items of an argument list --------------------

DEDUP = """
import torch

def f(xs):
    total = torch.zeros(4)
    previous = None
    for x in xs:
        if x is not previous:      # a run of one tensor counts once
            total = total + x
        previous = x
    return total
"""


def three_apart(env):
    return ([torch.randn(4), torch.randn(4), torch.randn(4)],)


def first_repeated(env):
    t = torch.randn(4)
    return ([t, t, torch.randn(4)],)


@backends()
def test_is_not_between_items_of_an_argument_list(backend):
    run_case(
        Case(
            "is_not_between_items_of_an_argument_list",
            prog(DEDUP),
            [
                *calls(2, three_apart),
                *calls(2, first_repeated, label="[t, t, u]"),
                *calls(2, three_apart),
            ],
            min_hits=3,
            max_monitor_runs=2,
        ),
        backend,
    )


# --- an argument against a module's buffer -------------------------------------


class Shift(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.register_buffer("ref", torch.randn(4))

    def forward(self, x):
        if x is self.ref:  # shifting the reference by itself: nothing to do
            return self.lin(x)
        return self.lin(x - self.ref)


def build_shift():
    torch.manual_seed(0)
    return Env(target=Shift())


def the_buffer(env):
    return (env.target.ref,)


@backends()
def test_argument_against_a_module_buffer(backend):
    run_case(
        Case(
            "argument_against_a_module_buffer",
            build_shift,
            [
                *calls(2, vec),
                *calls(2, the_buffer, label="x is the buffer"),
                *calls(2, vec),
                *calls(2, the_buffer),
            ],
            min_hits=4,
            max_monitor_runs=2,
        ),
        backend,
    )


# --- an argument against what the program stored before the test ---------------

STORED_FIRST = """
import torch

class Pair(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.anchor = None

    def forward(self, x, y):
        self.anchor = x            # written by the call before the test reads it
        if y is self.anchor:
            return y * 3
        return y - self.anchor

pair = Pair()
"""


@backends()
def test_identity_against_state_the_call_wrote_first(backend):
    run_case(
        Case(
            "identity_against_state_the_call_wrote_first",
            prog(STORED_FIRST, "pair"),
            [
                *calls(2, two),
                *calls(2, same, label="y is x"),
                *calls(2, two),
            ],
            min_hits=3,
            max_monitor_runs=2,
        ),
        backend,
    )


# --- a made object against one from outside: decided by the program ------------

MADE = """
import torch

CACHE = {"last": None}

def f(x):
    y = x + 1                      # made by the call: never the cached object
    if y is CACHE["last"]:
        return y * 0
    return y * 2
"""


@backends()
def test_made_object_against_an_outside_one_replays(backend):
    run_case(
        Case(
            "made_object_against_an_outside_one_replays",
            prog(MADE),
            [
                *calls(2, vec),
                execg("CACHE['last'] = torch.ones(4)"),
                *calls(3, vec),
            ],
            min_hits=3,
            max_monitor_runs=2,
        ),
        backend,
    )


# --- two module arguments: one module twice, then two ---------------------------

MODULES = """
import torch

def f(enc, dec, x):
    if enc is dec:                 # tied: run the one module once
        return enc(x)
    return dec(enc(x))

lin1 = torch.nn.Linear(4, 4)
lin2 = torch.nn.Linear(4, 4)
"""


def tied(env):
    return env.ns.lin1, env.ns.lin1, torch.randn(4)


def untied(env):
    return env.ns.lin1, env.ns.lin2, torch.randn(4)


@backends()
def test_one_module_passed_twice_then_two(backend):
    run_case(
        Case(
            "one_module_passed_twice_then_two",
            prog(MODULES),
            [
                *calls(2, untied),
                *calls(2, tied, label="enc is dec"),
                *calls(2, untied),
            ],
            min_hits=3,
            max_monitor_runs=2,
        ),
        backend,
    )


TWO_MODULES = """
import types
import torch

lib = types.ModuleType("lib23")
exec(
    "def act(x):\\n    return x * 2\\n\\ndef helper(x):\\n    return act(x) + 1\\n",
    lib.__dict__,
)
act, helper = lib.act, lib.helper  # ``from lib import act, helper``

def f(x):
    return act(x) + helper(x)
"""


@backends()
def test_a_function_rebound_in_the_module_that_calls_it(backend):
    # ``helper`` reads ``act`` from lib's globals: one function reached through two
    # modules' globals; rebinding lib.act changes helper, not this module's ``act``.
    run_case(
        Case(
            "a_function_rebound_in_the_module_that_calls_it",
            prog(TWO_MODULES),
            [
                *calls(2, lambda env: (torch.ones(2),)),
                execg("lib.act = lambda x: x * 100"),
                *calls(2, lambda env: (torch.ones(2),)),
            ],
            min_hits=2,
        ),
        backend,
    )


# ---------------------------------------------------------------------------
# Python objects (not tensors) changed through one path and read through another:
# a record made for two objects must not replay for one (found by a probe).

ARGUMENT_IS_THE_GLOBAL = """
import torch

class Settings:
    def __init__(self):
        self.k = 1.0

G = Settings()

def f(x, o):
    o.k = o.k + 1
    return x * G.k
"""


@backends()
def test_an_object_argument_that_is_also_the_global_read(backend):
    run_case(
        Case(
            "an_object_argument_that_is_also_the_global_read",
            prog(ARGUMENT_IS_THE_GLOBAL),
            [
                *calls(2, lambda env: (torch.ones(2), env.ns.Settings())),
                Call(lambda env: (torch.ones(2), env.ns.G), label="f(x, G)"),
                *calls(2, lambda env: (torch.ones(2), env.ns.Settings())),
            ],
            min_hits=1,
        ),
        backend,
    )


ONE_LIST_TWICE = """
def f(xs, ys):
    xs.append(0)
    return len(ys)
"""


@backends()
def test_two_list_arguments_that_are_one_list(backend):
    def one_list(env):
        shared = []
        return shared, shared

    run_case(
        Case(
            "two_list_arguments_that_are_one_list",
            prog(ONE_LIST_TWICE),
            [
                *calls(2, lambda env: ([], [])),
                Call(one_list, label="f(l, l)"),
                *calls(2, lambda env: ([], [])),
            ],
            min_hits=1,
        ),
        backend,
    )
