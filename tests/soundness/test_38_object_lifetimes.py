"""Class 38: when objects the call made or read are freed, and what they hold.

Eager Python frees a function's locals when it returns (reference counting).
The monitoring run held the frames it traced in reference cycles (each frame's
tracer closure named itself and held the frame), and the run itself sat in
cycles with its tape and capture mode: what the call made lived on until the
cyclic collector ran.  A program that can tell (a ``WeakValueDictionary``
registry, ``weakref.finalize``, a weak reference checked on the next call) took
another branch after the monitored call.  The cases run with the collector off,
so the outcome does not depend on when it happens to run.

Also here: a size the monitor follows (an ``int`` subclass) must be an ``int``
to the program: ``type(n) is int``, in the attributes of objects the call made,
and in library code the monitor does not step into (``functools.lru_cache``
keyed it apart from the int, F52).
"""

from __future__ import annotations

import dataclasses
import gc
from functools import partial

import pytest
import torch
from harness import Call, Case, backends, calls, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="lifetimes38")


@pytest.fixture(autouse=True)
def no_cyclic_collection():
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def fresh(env):
    return (torch.randn(3),)


WEAK_REGISTRY = """
import weakref
import torch

class Box:
    def __init__(self, t):
        self.t = t

registry = weakref.WeakValueDictionary()

def f(x):
    seen = "last" in registry  # the previous call's Box is gone once it returned
    b = Box(x * 2)
    registry["last"] = b
    return x * (3.0 if seen else 2.0)
"""


@backends()
def test_an_object_the_call_made_is_freed_when_it_returns(backend):
    run_case(
        Case(
            "an_object_the_call_made_is_freed_when_it_returns",
            prog(WEAK_REGISTRY),
            calls(5, fresh),
            min_hits=3,
        ),
        backend,
    )


FINALIZER = """
import weakref
import torch

freed = []

class Scratch:
    pass

def f(x):
    s = Scratch()
    weakref.finalize(s, freed.append, 1)
    s.value = x.sum()
    return x * (len(freed) + 1)
"""


@backends()
def test_a_finalizer_runs_when_the_call_returns(backend):
    run_case(
        Case(
            "a_finalizer_runs_when_the_call_returns",
            prog(FINALIZER),
            calls(5, fresh),
        ),
        backend,
    )


DEL_METHOD = """
import torch

freed = []

class Scratch:
    def __del__(self):
        freed.append(1)

def f(x):
    s = Scratch()
    s.value = x.sum()
    return x * 2
"""


def freed_count(env):
    return {"freed": len(env.ns.freed)}


@backends()
def test_a_del_method_runs_on_every_call(backend):
    # The object is made and dropped inside the call: eager runs its __del__ each
    # time, and a replay, which makes no such object, would not.
    case = Case("a_del_method_runs_on_every_call", prog(DEL_METHOD), calls(4, fresh))
    run_case(dataclasses.replace(case, watch=freed_count), backend)


WEAK_ARGUMENT = """
import weakref
import torch

last = [None]

def f(x):
    previous = last[0]
    fresh = previous is None or previous() is None
    last[0] = weakref.ref(x)
    return x + (1.0 if fresh else 0.0)
"""


@backends()
def test_a_weak_reference_to_the_previous_argument(backend):
    """Each call's argument is dropped by the caller before the next one: eager's weak
    reference is dead then, and so must be the compiled twin's."""
    run_case(
        Case(
            "a_weak_reference_to_the_previous_argument",
            prog(WEAK_ARGUMENT),
            calls(5, fresh),
        ),
        backend,
    )


# ---------------------------------------------------------------------------
# Followed sizes are ints to the program: ``type(n)``, ``n.__class__``, objects the
# call makes, and library code the monitor does not step into (``lru_cache``).

SIZE_TYPES = """
import torch

class Frozen:
    def __init__(self, n):
        self.n = n

kept = []

def f(x):
    n = x.shape[0]
    fz = Frozen(n)
    kept.append(fz)
    return x * 2, type(n) is int, n.__class__ is int, type(fz.n).__name__
"""


@backends()
def test_a_followed_size_is_an_int_to_the_program(backend):
    def rows(n):
        return lambda env: (torch.randn(n, 3),)

    run_case(
        Case(
            "a_followed_size_is_an_int_to_the_program",
            prog(SIZE_TYPES),
            [Call(rows(n)) for n in (2, 3, 4, 5, 6)],
            watch=lambda env: [type(fz.n).__name__ for fz in env.ns.kept],
            min_hits=2,
        ),
        backend,
    )


SIZE_KEYS = """
import torch

class Masks:
    cache = {}

    @classmethod
    def get(cls, n):
        if n not in cls.cache:
            cls.cache[n] = torch.tril(torch.ones(n, n))
        return cls.cache[n]

LAST = None

def f(x):
    global LAST
    LAST = x.shape[0]
    return x @ Masks.get(x.shape[0])
"""


@backends()
def test_a_followed_size_as_a_cache_key_and_a_global(backend):
    def square(n):
        return lambda env: (torch.randn(n, n),)

    run_case(
        Case(
            "a_followed_size_as_a_cache_key_and_a_global",
            prog(SIZE_KEYS),
            [Call(square(n)) for n in (3, 3, 4, 4, 5, 3)],
            watch=lambda env: (
                [type(k).__name__ for k in env.ns.Masks.cache],
                type(env.ns.LAST).__name__,
            ),
        ),
        backend,
    )
