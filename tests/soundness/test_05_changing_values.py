"""Class 5: values that change on every call.

Counters, lengths and values from globals that the program stores into a
container, returns inside a tuple or appends to a list must follow each call;
mutable default arguments, ``dict.setdefault`` and ``+=`` on items of an
argument dict, sets that grow.  Also the replay expectations of issue 12: a
function that times itself with the clock and keeps the duration, one that
computes a Python float from a tensor through numpy, one that adds a key to
an external dict: each replays after its first record(s).
"""

from __future__ import annotations

import torch
from harness import Call, Case, Do, Env, backends, calls, load_program, run_case


def vec(env):
    return torch.randn(4)


COUNTER = """
import torch

class Tracker(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.calls = 0
        self.history = []

    def forward(self, x):
        self.calls += 1
        self.history.append(self.calls)
        return self.lin(x), self.calls
"""


def build_counter():
    torch.manual_seed(0)
    ns = load_program(COUNTER, "counter")
    return Env(ns=ns, target=ns.Tracker())


@backends(inductor=True)
def test_counter_appended_and_returned(backend):
    run_case(
        Case(
            "counter_appended_and_returned",
            build_counter,
            calls(4, vec),
            watch=lambda env: {"calls": env.target.calls, "history": list(env.target.history)},
        ),
        backend,
    )


GET_COUNTER = """
import torch

STATS = {}

def f(x):
    STATS["steps"] = STATS.get("steps", 0) + 1
    return x * STATS["steps"], STATS.get("missing", 5)
"""


def build_get_counter():
    ns = load_program(GET_COUNTER, "get_counter")
    return Env(ns=ns, target=ns.f)


@backends()
def test_counter_kept_with_dict_get_replays(backend):
    # ``d[k] = d.get(k, 0) + 1``: once the count varies it is followed through ``get``
    run_case(
        Case(
            "counter_kept_with_dict_get_replays",
            build_get_counter,
            calls(7, vec),
            watch=lambda env: dict(env.ns.STATS),
            min_hits=4,
        ),
        backend,
    )


LENGTH = """
import torch

seen = []

def remember(x):
    seen.append(x.sum().item())
    return x * 2, len(seen)
"""


def build_length():
    ns = load_program(LENGTH, "length")
    return Env(ns=ns, target=ns.remember)


@backends()
def test_length_of_growing_list_returned(backend):
    run_case(Case("length_of_growing_list_returned", build_length, calls(4, vec)), backend)


GLOBAL_INTO_DICT = """
import torch

LR = 0.1
log = {}

def scaled(x):
    log["lr"] = LR
    log["norm"] = x.norm()
    return x * LR
"""


def build_global_into_dict():
    ns = load_program(GLOBAL_INTO_DICT, "global_into_dict")
    return Env(ns=ns, target=ns.scaled)


def set_lr(value):
    def action(env):
        env.ns.LR = value

    action.__name__ = f"LR = {value}"
    return action


@backends()
def test_global_stored_into_dict(backend):
    run_case(
        Case(
            "global_stored_into_dict",
            build_global_into_dict,
            [
                *calls(2, vec),
                Do(set_lr(0.01)),
                *calls(2, vec),
                Do(set_lr(0.5)),
                Call(vec),
                Do(set_lr(0.25)),
                Call(vec),
            ],
        ),
        backend,
    )


DEFAULT_ARG = """
import torch

def step(x, cache=[]):
    cache.append(1)
    return x + len(cache)
"""


def build_default_arg():
    ns = load_program(DEFAULT_ARG, "default_arg")
    return Env(ns=ns, target=ns.step)


@backends()
def test_mutable_default_argument(backend):
    run_case(
        Case(
            "mutable_default_argument",
            build_default_arg,
            calls(4, vec),
            watch=lambda env: {"cache": list(env.ns.step.__defaults__[0])},
        ),
        backend,
    )


def build_setdefault():
    def count(x, stats):
        stats.setdefault("n", 0)
        stats["n"] += 1
        stats["total"] = stats.get("total", 0.0) + 1.5
        return x * stats["n"]

    return Env(target=count, stats={})


@backends()
def test_setdefault_and_iadd_on_argument_dict(backend):
    run_case(
        Case(
            "setdefault_and_iadd_on_argument_dict",
            build_setdefault,
            calls(4, lambda env: (torch.randn(3), env.stats)),
        ),
        backend,
    )


def build_growing_set():
    def distinct(x, tags):
        tags.add(x.shape[0])
        return x.sum(), len(tags), sorted(tags)

    return Env(target=distinct, tags=set())


@backends()
def test_set_that_grows(backend):
    sizes = [2, 3, 3, 5, 2, 7]
    run_case(
        Case(
            "set_that_grows",
            build_growing_set,
            [Call(lambda env, n=n: (torch.randn(n), env.tags)) for n in sizes],
        ),
        backend,
    )


CLOCK = """
import time
import torch

timings = []

def timed(x):
    start = time.perf_counter()
    y = (x @ x.T).softmax(-1)
    timings.append(time.perf_counter() - start)
    return y
"""


def build_clock():
    ns = load_program(CLOCK, "clock")
    return Env(ns=ns, target=ns.timed)


def timing_watch(env):
    # durations differ between the twins: compare that each call kept one, positive
    return {
        "n": len(env.ns.timings),
        "positive": all(t > 0 for t in env.ns.timings),
        "distinct": len(set(env.ns.timings)) == len(env.ns.timings),
    }


@backends()
def test_clock_duration_kept_replays(backend):
    run_case(
        Case(
            "clock_duration_kept_replays",
            build_clock,
            calls(5, lambda env: torch.randn(3, 3)),
            watch=timing_watch,
            min_hits=4,
        ),
        backend,
    )


NUMPY_FLOAT = """
import numpy as np
import torch

def spread(x):
    arr = x.detach().numpy()
    scale = float(np.std(arr)) + 1.0
    return x / scale, scale
"""


def build_numpy_float():
    ns = load_program(NUMPY_FLOAT, "numpy_float")
    return Env(ns=ns, target=ns.spread)


@backends()
def test_numpy_float_replays(backend):
    run_case(Case("numpy_float_replays", build_numpy_float, calls(5, vec), min_hits=4), backend)


EXTERNAL_DICT = """
import torch

registry = {}

def register(name, x):
    registry[name] = x.mean()
    return x - registry[name]
"""


def build_external_dict():
    ns = load_program(EXTERNAL_DICT, "external_dict")
    return Env(ns=ns, target=ns.register)


EXTERNAL_CACHE = """
import torch

cache = {}

def center(x):
    cache["mean"] = x.mean()
    return x - cache["mean"]
"""


def build_external_cache():
    ns = load_program(EXTERNAL_CACHE, "external_cache")
    return Env(ns=ns, target=ns.center)


@backends()
def test_external_dict_new_key_replays(backend):
    run_case(
        Case("external_dict_new_key_replays", build_external_cache, calls(5, vec), min_hits=4),
        backend,
    )


@backends()
def test_external_dict_new_key_correct(backend):
    names = ["a", "b", "a", "c", "b", "d"]
    run_case(
        Case(
            "external_dict_new_key_correct",
            build_external_dict,
            [Call(lambda env, n=n: (n, torch.randn(4))) for n in names],
        ),
        backend,
    )


STEP_ATTR = """
import torch

class Warmup(torch.nn.Module):
    def __init__(self, warmup=3):
        super().__init__()
        self.warmup = warmup
        self.step = 0
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        self.step += 1
        factor = min(1.0, self.step / self.warmup)
        return self.lin(x) * factor, {"step": self.step, "factor": factor}
"""


def build_warmup():
    torch.manual_seed(0)
    ns = load_program(STEP_ATTR, "warmup")
    return Env(ns=ns, target=ns.Warmup())


@backends(inductor=True)
def test_step_counter_in_returned_dict(backend):
    run_case(Case("step_counter_in_returned_dict", build_warmup, calls(6, vec)), backend)


SNAPSHOT = """
import torch

log = []

def program(x):
    log.append(x.shape[0])
    return x * 2, list(log)
"""


def build_snapshot():
    ns = load_program(SNAPSHOT, "snapshot")
    return Env(ns=ns, target=ns.program)


@backends()
def test_copy_of_growing_list_returned(backend):
    run_case(Case("copy_of_growing_list_returned", build_snapshot, calls(4, vec)), backend)
