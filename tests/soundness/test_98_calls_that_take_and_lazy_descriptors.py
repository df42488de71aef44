"""Class 98: calls that take from outside objects, and the program's lazy descriptors (found 2026-12-07).

Probes of the nineteenth session (standard-library state, attribute storage,
decoding loops):

- F362: ``v = Q.get_nowait()`` (``it.__next__()``, ``gen.send(None)``, a cached call)
  then a branch on ``v``: a replay took the item, missed at the branch, and the
  monitoring run that followed took another one (an item lost per miss; a cached
  call counted twice).  A callout that may change outside state hands its result
  to the monitoring run after a miss, as an output effect did.
- F363: ``x * STEP.__next__()`` of an outside ``itertools.count``: taken for a pure
  call (``itertools`` is pure as a module), the replay kept the first number and
  the counter stopped.  Refused like ``next(STEP)``.
- F364: a ``cached_property`` of the program's own (Django's, werkzeug's, pyramid's
  ``reify``: a ``__get__`` that stores into the instance): replays ran the builder
  again; the guard now asks that the instance holds no value yet, as for
  ``functools.cached_property``.
- F365: ``vars(args).update(scale=...)`` then ``args.scale``: the read took the
  value at entry; the keys ``update`` stores are the run's now.
- F366: ``del ns.table`` of a ``cached_property`` on a ``SimpleNamespace`` subclass,
  ``del state.tmp`` on a module with a PEP 562 ``__getattr__``: the state the
  deletion left was read with ``getattr``, running the builder or the program's
  ``__getattr__`` again (follow-up of F357).
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Call, Case, backends, calls, execg, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="takes98")


def _ones(env):
    return (torch.ones(3),)


def _vector(env):
    return (torch.randn(3),)


QUEUE_THEN_BRANCH = """
import queue
import torch

Q = queue.Queue()
for i in range(1, 9):
    Q.put(float(i))

def f(x):
    v = Q.get_nowait()
    if v > 2.5:
        return x * v * 10
    return x * v
"""


@backends()
def test_an_item_taken_before_a_miss_is_taken_once(backend):
    watch = lambda env: env.ns.Q.qsize()
    case = Case("queue", prog(QUEUE_THEN_BRANCH), calls(5, _ones), min_hits=2, watch=watch)
    run_case(case, backend)


CACHED_THEN_MISS = """
import functools
import torch

VOCAB = {i: "t%d" % i for i in range(20)}

@functools.lru_cache(maxsize=None)
def tok_str(t):
    return VOCAB[t]

@functools.cache
def stop_ids():
    return frozenset(t for t, s in VOCAB.items() if s.endswith("7"))

def f(x):
    t = int(x.argmax())
    s = tok_str(t)
    if t in stop_ids():
        return s
    return s + "!"
"""


@backends()
def test_a_cached_call_before_a_miss_is_made_once(backend):
    one_hot = lambda env: (torch.nn.functional.one_hot(torch.tensor(17), 20).float(),)
    change = execg("VOCAB[17] = 'seventeen'; stop_ids.cache_clear()")
    script = [Call(one_hot), Call(one_hot), change, Call(one_hot), Call(one_hot)]
    watch = lambda env: tuple(env.ns.tok_str.cache_info())
    run_case(Case("cached", prog(CACHED_THEN_MISS), script, watch=watch), backend)


DUNDER_NEXT = """
import itertools
import torch

STEP = itertools.count(1)

def f(x):
    return x * STEP.__next__()
"""


@backends()
def test_dunder_next_of_an_outside_iterator(backend):
    watch = lambda env: repr(env.ns.STEP)
    run_case(Case("dunder_next", prog(DUNDER_NEXT), calls(4, _vector), watch=watch), backend)


LAZY_DESCRIPTOR = """
import torch

BUILDS = []

class cached_property:
    def __init__(self, func):
        self.func = func
        self.name = func.__name__

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        value = instance.__dict__[self.name] = self.func(instance)
        return value

class Tables:
    @cached_property
    def table(self):
        BUILDS.append(1)
        return torch.ones(3)

tables = Tables()

def f(x):
    return x + tables.table
"""


@backends()
def test_the_programs_own_cached_property(backend):
    reset = execg("tables.__dict__.pop('table', None)")
    script = [Call(_vector), Call(_vector), Call(_vector), reset, Call(_vector), Call(_vector)]
    watch = lambda env: (len(env.ns.BUILDS), "table" in vars(env.ns.tables))
    run_case(Case("lazy", prog(LAZY_DESCRIPTOR), script, min_hits=2, watch=watch), backend)


VARS_UPDATE = """
import argparse
import torch

args = argparse.Namespace(scale=1.0)

def f(x):
    vars(args).update(scale=args.scale + 1.0)
    return x * args.scale
"""


@backends()
def test_attributes_stored_through_vars_update(backend):
    script = []
    for scale in ("1.0", "2.0", "2.0", "2.0"):
        script += [execg(f"args.scale = {scale}"), Call(_ones)]
    watch = lambda env: dict(vars(env.ns.args))
    run_case(Case("vars_update", prog(VARS_UPDATE), script, min_hits=1, watch=watch), backend)


NAMESPACE_CACHED_PROPERTY = """
import functools
import types
import torch

BUILDS = []

class Settings(types.SimpleNamespace):
    @functools.cached_property
    def table(self):
        BUILDS.append(1)
        return torch.ones(3)

settings = Settings(scale=1.0)

def f(x):
    y = x + settings.table
    del settings.table
    return y
"""


@backends()
def test_a_cached_property_of_a_namespace_class_deleted(backend):
    watch = lambda env: (len(env.ns.BUILDS), "table" in vars(env.ns.settings))
    case = Case("namespace", prog(NAMESPACE_CACHED_PROPERTY), calls(4, _vector), watch=watch)
    run_case(case, backend)


MODULE_GETATTR = """
import types
import torch

state = types.ModuleType("state")
CALLS = []

def _defaults(name):
    if name.startswith("__"):
        raise AttributeError(name)
    CALLS.append(name)
    return 0.0

state.__getattr__ = _defaults

def f(x):
    state.tmp = 5.0
    y = x * state.tmp
    del state.tmp
    return y
"""


@backends()
def test_a_deletion_on_a_module_with_its_own_getattr(backend):
    watch = lambda env: (list(env.ns.CALLS), "tmp" in vars(env.ns.state))
    case = Case("module_getattr", prog(MODULE_GETATTR), calls(4, _vector), min_hits=2, watch=watch)
    run_case(case, backend)
