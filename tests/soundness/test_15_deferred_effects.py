"""Class 15: output effects made after the graph instead of splitting it.

A print, log or warning whose arguments are plain values (strings, numbers,
sizes) cannot see what the graph computes, so the mock makes it after the
graph (runtime/capture/tape.py, ``Callout.deferred``).  These cases check what a
user could notice: the same lines in the same order on every call, also when
a data-dependent path misses, when a later op raises, when sizes vary, and
when the message reads state the program changes right after.
"""

from __future__ import annotations

import torch
from harness import Call, Case, Do, backends, calls, program_env, run_case

PRINT_THEN_BRANCH = """
import torch

def gate(x, mask):
    h = x * 2
    print("gate: width", h.shape[-1])
    if mask.all():                      # a data check in front of the graph
        h = h + 1
    print("gate: done")
    return h
"""


@backends(inductor=True)
def test_prints_around_a_data_dependent_path(backend):
    def mask(values):
        return lambda env: (torch.randn(3), torch.tensor(values))

    run_case(
        Case(
            "prints_around_path",
            lambda: program_env(PRINT_THEN_BRANCH, "gate"),
            [
                *calls(2, mask([True, True, True])),
                *calls(2, mask([True, False, True])),
                *calls(2, mask([True, True, True])),
            ],
            min_hits=3,
        ),
        backend,
    )


PRINT_SIZES = """
import torch

def encode(x):
    h = torch.tanh(x)
    print(f"encode: batch {h.size(0)} x {h.size(1)}")
    return h.sum(dim=1)
"""


def test_printed_sizes_follow_each_call():
    def rows(n):
        return lambda env: (torch.randn(n, 4),)

    run_case(
        Case(
            "printed_sizes",
            lambda: program_env(PRINT_SIZES, "encode"),
            [Call(rows(2)), Call(rows(3)), Call(rows(5)), Call(rows(6)), Call(rows(2))],
            min_hits=2,
        ),
        "eager",
    )


PRINT_THEN_RAISE = """
import torch

def pick(x, index):
    h = x * 2
    print("pick: looking up", h.shape[0], "rows")
    return h[index]                    # raises for an index out of range
"""


def test_print_before_an_op_that_raises_prints_once():
    def lookup(i):
        return lambda env: (torch.randn(4), torch.tensor(i))

    run_case(
        Case(
            "print_then_raise",
            lambda: program_env(PRINT_THEN_RAISE, "pick"),
            [*calls(2, lookup(1)), Call(lookup(7)), *calls(2, lookup(2)), Call(lookup(9))],
        ),
        "eager",
    )


WARN_SIZES = """
import warnings
import torch

def widen(x):
    h = x.repeat(1, 2)
    if h.shape[-1] > 4:
        warnings.warn(f"width {h.shape[-1]} exceeds 4")
    return h * 0.5
"""


def test_warning_with_sizes():
    run_case(
        Case(
            "warn_sizes",
            lambda: program_env(WARN_SIZES, "widen"),
            [
                *calls(3, lambda env: (torch.randn(2, 3),)),
                *calls(2, lambda env: (torch.randn(2, 2),)),
            ],
            compare_warnings=True,
            min_hits=3,
        ),
        "eager",
    )


PRINT_TENSOR = """
import torch

def show(x):
    h = x + 1
    print("values", h)                 # reads the tensor: this one must split
    h.mul_(2)
    return h
"""


def test_print_of_a_tensor_still_sees_its_value_then():
    run_case(
        Case(
            "print_tensor",
            lambda: program_env(PRINT_TENSOR, "show"),
            calls(3, lambda env: (torch.randn(3),)),
        ),
        "eager",
    )


PRINT_COUNTER = """
import torch

state = {"calls": 0}

def step(x):
    print("step", state["calls"])       # the value before the update below
    state["calls"] += 1
    return x * state["calls"]
"""


def test_print_of_state_the_program_changes_after_it():
    def reset(env):
        env.ns.state["calls"] = 10

    run_case(
        Case(
            "print_counter",
            lambda: program_env(PRINT_COUNTER, "step"),
            [
                *calls(3, lambda env: (torch.ones(2),)),
                Do(reset, "calls = 10"),
                *calls(2, lambda env: (torch.ones(2),)),
            ],
            watch=lambda env: dict(env.ns.state),
        ),
        "eager",
    )


HELD_PRINT_THEN_RAISE = """
import torch

def f(x, idx):
    h = x * 1
    print("step", x.sum().item())  # before the mid-guard: held back until it passes
    h.relu_()  # keeps the next read where it is (not hoisted)
    if h.max() > 2:
        y = x * 2
    else:
        y = x - 1
    return y[idx]  # raises for an index out of range
"""


@backends()
def test_a_held_back_print_is_made_once_when_the_replay_raises_later(backend):
    # the replay prints, then its graph raises: the program is run again to raise at its
    # own line, handed the print's result, so the line is printed once
    steps = [([1.0, 3.0], 0), ([1.0, 4.0], 1), ([1.0, 5.0], 1), ([2.0, 6.0], 7), ([0.0, 1.0], 0)]
    steps += [([0.0, 2.0], 1), ([1.0, 1.0], 5)]
    run_case(
        Case(
            "held_back_print_made_once_when_the_replay_raises",
            lambda: program_env(HELD_PRINT_THEN_RAISE, "f", "held_print_then_raise"),
            [
                step
                for values, index in steps
                for step in calls(
                    1, lambda env, v=values, i=index: (torch.tensor(v), torch.tensor(i))
                )
            ],
        ),
        backend,
    )


HELD_PRINT_THEN_IN_PLACE = """
import torch

def f(x):
    h = x * 2
    print("h", h)  # before the mid-guard below
    h.relu_()  # changes the printed tensor after the print
    if h.sum() > 3:
        return h + 1
    return h - 1
"""


@backends()
def test_a_print_is_not_held_back_past_an_in_place_update_of_its_tensor(backend):
    # held back until the mid-guard passed, the print showed h after relu_()
    values = [[-1.0, 2.0], [-3.0, 2.5], [-1.0, 0.5], [-4.0, 3.0], [-2.0, 0.25]]
    run_case(
        Case(
            "held_back_print_before_in_place",
            lambda: program_env(HELD_PRINT_THEN_IN_PLACE, "f", "held_print_then_in_place"),
            [step for v in values for step in calls(1, lambda env, v=v: (torch.tensor(v),))],
            min_hits=2,
        ),
        backend,
    )
