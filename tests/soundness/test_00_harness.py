"""The harness can fail: a deliberately wrong "compiled" twin is caught, for every
kind of difference the suite relies on."""

from __future__ import annotations

import collections
import functools
import random

import pytest
import torch
from harness import (
    Call,
    Case,
    Do,
    Env,
    SoundnessFailure,
    calls,
    default_watch,
    known_objects,
    load_program,
    program_env,
    run_case,
)

import fullgraph.runtime as fr

SOURCE = """
import random
import torch

history = []
calls = 0

def step(x, scale=2.0):
    global calls
    calls += 1
    history.append(calls)
    print("step", calls)
    noise = torch.rand(1)
    return (x * scale + noise, torch.Size([calls]))
"""


def build():
    ns = load_program(SOURCE, "selftest")
    return Env(ns=ns, target=ns.step)


SCRIPT = [
    *calls(2, lambda env: torch.randn(3)),
    Do(lambda env: None, "nothing"),
    Call(lambda env: torch.randn(3)),
]


def planted(change):
    """A "compiler" that runs the real function, then plants one difference."""

    def compiler(target):
        @functools.wraps(target)
        def wrong(*args, **kwargs):
            wrong.stats.monitor_runs += 1
            return change(target, args, kwargs)

        wrong.stats = fr.Stats()  # never replays
        return wrong

    return compiler


def run_planted(change, case=None):
    case = case or Case("selftest", build, SCRIPT)
    with pytest.raises(SoundnessFailure) as info:
        run_case(case, "eager", compiler=planted(change))
    return info.value


def test_identical_twin_passes():
    run_case(Case("selftest", build, SCRIPT), "eager", compiler=planted(lambda f, a, k: f(*a, **k)))


def test_value_difference():
    def change(f, a, k):
        out, size = f(*a, **k)
        return out + 1e-6, size

    assert run_planted(change).kind == "wrong"


def test_dtype_difference():
    def change(f, a, k):
        out, size = f(*a, **k)
        return out.double(), size

    failure = run_planted(change)
    assert "dtype" in str(failure)


def test_python_type_difference():
    def change(f, a, k):
        out, size = f(*a, **k)
        return out, tuple(size)  # torch.Size -> tuple

    assert "type tuple" in str(run_planted(change))


def test_namedtuple_vs_tuple():
    Pair = collections.namedtuple("Pair", "a b")

    def build_nt():
        def fn(x):
            return Pair(x, x + 1)

        return Env(target=fn)

    failure = run_planted(
        lambda f, a, k: tuple(f(*a, **k)), Case("nt", build_nt, calls(1, lambda env: torch.ones(2)))
    )
    assert "type tuple" in str(failure)


def test_lost_global_effect():
    def change(f, a, k):
        result = f(*a, **k)
        f.__globals__["history"].pop()  # the append is lost
        return result

    assert "history" in str(run_planted(change))


def test_extra_print():
    def change(f, a, k):
        result = f(*a, **k)
        print("extra")
        return result

    assert "stdout" in str(run_planted(change))


def test_rng_difference():
    def change(f, a, k):
        result = f(*a, **k)
        torch.rand(1)
        return result

    assert "torch RNG" in str(run_planted(change))


def test_python_rng_difference():
    def change(f, a, k):
        result = f(*a, **k)
        random.random()
        return result

    assert "random RNG" in str(run_planted(change))


def test_grad_mode_left_changed():
    def change(f, a, k):
        result = f(*a, **k)
        torch.set_grad_enabled(False)
        return result

    assert "grad_enabled" in str(run_planted(change))


def test_internal_error():
    def change(f, a, k):
        raise RuntimeError("fullgraph bug")

    assert run_planted(change).kind == "internal"


def test_different_exception_message():
    def build_raising():
        def fn(x):
            raise ValueError(f"bad {x.shape[0]}")

        return Env(target=fn)

    def change(f, a, k):
        raise ValueError("bad")

    failure = run_planted(change, Case("raise", build_raising, calls(1, lambda env: torch.ones(2))))
    assert failure.kind == "internal"


def test_missing_exception():
    def build_raising():
        def fn(x):
            raise KeyError("k")

        return Env(target=fn)

    failure = run_planted(
        lambda f, a, k: None, Case("raise", build_raising, calls(1, lambda env: torch.ones(2)))
    )
    assert failure.kind == "wrong"


def test_identity_difference():
    def build_id():
        def fn(x):
            return x

        return Env(target=fn)

    failure = run_planted(
        lambda f, a, k: f(*a, **k).clone(),
        Case("id", build_id, calls(1, lambda env: torch.ones(2))),
    )
    assert "identity" in str(failure)


def test_stale_parameter_update():
    def build_model():
        torch.manual_seed(0)
        model = torch.nn.Linear(2, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = model(x).sum()
            loss.backward()
            opt.step()
            return loss.detach()

        return Env(model=model, target=step)

    def change(f, a, k):  # "forgets" the backward pass and the optimizer step
        with torch.no_grad():
            return f.__closure__[0].cell_contents(*a).sum()

    failure = run_planted(change, Case("train", build_model, calls(2, lambda env: torch.ones(2))))
    assert "state" in str(failure)


def test_replay_expectation():
    case = Case("noreplay", build, SCRIPT, min_hits=1)
    with pytest.raises(SoundnessFailure) as info:
        run_case(case, "eager", compiler=planted(lambda f, a, k: f(*a, **k)))
    assert info.value.kind == "no-replay"


def test_twins_have_their_own_globals():
    envs = [build(), build()]
    envs[0].ns.history.append(1)
    assert envs[1].ns.history == []
    assert envs[0].ns.step is not envs[1].ns.step


HOOKED_CLASSES = """
import torch

looks = 0

class Registry(type):
    def __getattr__(cls, name):
        raise KeyError(name)   # hasattr() lets only AttributeError through

class Table(metaclass=Registry):
    scale = 2.0

class Counted:
    def __getattribute__(self, name):
        global looks
        looks += 1
        return object.__getattribute__(self, name)

counted = Counted()

def step(x):
    return x * Table.scale
"""


def test_the_harness_runs_none_of_the_programs_attribute_hooks():
    # known_objects and the snapshots look at every global: a metaclass __getattr__ that
    # raises KeyError crashed them, and a counting __getattribute__ counted their looks.
    case = Case(
        "hooked",
        lambda: program_env(HOOKED_CLASSES, "step", "hooked"),
        calls(2, lambda env: torch.ones(2)),
        watch=lambda env: env.ns.looks,
    )
    run_case(case, "eager", compiler=planted(lambda f, a, k: f(*a, **k)))
    env = program_env(HOOKED_CLASSES, "step", "hooked")
    known_objects(env, (), {})
    default_watch(env)
    assert env.ns.looks == 0
