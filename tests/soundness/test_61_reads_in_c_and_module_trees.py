"""Class 61: what C code and torch's Python read that the monitor did not see.

Found by the fifteenth session's probes of Python semantics and module state
(F266-F272):

- ``enumerate(d)`` / ``zip(d, ...)`` over an outside dict, set or deque, and
  ``f(*a_deque)``: C iterates the container, its keys or items were unguarded.
- Set and deque methods (``a.issubset(b)``, ``q.count(v)``, ``deque(q)``,
  ``islice(q, 3)``) and ``bytes(buf)`` read an outside container in C.
- ``functools.partial(print, ...)``: the print was taken as a pure call (shown on
  the monitored call only); ``partial(hist.append)`` changed a list unseen.
- ``mode is TRAIN`` between equal strings: identity is not what a guard by value
  checks.
- ``m.state_dict()``, ``repr(m)``, ``m.extra_repr()``, ``m.get_parameter(n)``,
  ``copy.deepcopy(m)``: torch's Python read the module tree unobserved.
"""

from __future__ import annotations

import os
from functools import partial

import torch
from harness import Call, Case, Do, backends, calls, execg, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="reads61")


def fresh(env):
    return (torch.rand(3),)


ITERATED_IN_C = """
import collections, itertools
import torch

weights = {"a": 1.0}
hist = collections.deque([1.0], maxlen=3)
tags = {"x"}

def f(x):
    out = x
    for i, k in enumerate(weights):
        out = out + weights[k] * (i + 1)
    for i, v in enumerate(hist):
        out = out + v * i
    n_tags = sum(1 for _ in enumerate(tags))
    pairs = sum(a for a, _ in zip(hist, range(9)))
    keys = sum(1 for _ in zip(weights, range(9)))
    return out, n_tags, pairs, keys, sum(itertools.islice(hist, 3)), (lambda *a: len(a))(*hist)
"""


@backends()
def test_outside_containers_iterated_by_c_code(backend):
    script = [*calls(2, fresh), execg("weights['b'] = 2.0"), Call(fresh)]
    script += [execg("hist.append(5.0)"), Call(fresh), execg("tags.add('y')"), *calls(2, fresh)]
    run_case(Case("iterated_in_c", prog(ITERATED_IN_C), script, min_hits=2), backend)


CONTAINER_METHODS = """
import array, collections
import torch

a, b = {1}, {1, 2}
tags = {"p"}
q = collections.deque([1.0, 2.0])
buf = bytearray([1, 2])
arr = array.array("d", [1.0])

def f(x):
    local = set()
    local.update(a)
    sets = x * a.issubset(b) + x * len(a.union(b)) + x * len(local) + x * len(a.copy())
    deques = x * q.count(1.0) + x * collections.deque(q)[-1] + x * (q == collections.deque([1.0]))
    return sets, deques, ",".join(sorted(tags)), repr(q), bytes(buf)[0] * x, sum(arr) * x
"""


@backends()
def test_set_deque_and_buffer_methods_of_outside_containers(backend):
    script = [*calls(2, fresh), execg("a.add(3)"), Call(fresh), execg("tags.add('q')")]
    script += [Call(fresh), execg("q.appendleft(1.0); q.append(5.0)"), Call(fresh)]
    script += [execg("buf[0] = 7; arr.append(2.0)"), *calls(2, fresh)]
    run_case(Case("container_methods", prog(CONTAINER_METHODS), script, min_hits=2), backend)


PARTIALS = """
import functools
import torch

log = functools.partial(print, "[train]", flush=True)
hist = []
push = functools.partial(hist.append)

def logs(x, n):
    log("step", n)
    return x * n

def pushes(x):
    push(x.shape[0])
    return x * 2
"""


@backends()
def test_a_partial_of_print_prints_on_every_call(backend):
    script = [Call(lambda env: (torch.rand(2), 1)) for _ in range(3)]
    script += [Call(lambda env: (torch.rand(2), 2)) for _ in range(2)]
    run_case(Case("partial_print", prog(PARTIALS, "logs"), script, min_hits=2), backend)


@backends()
def test_a_partial_of_a_list_append(backend):
    watch = lambda env: list(env.ns.hist)
    case = Case("partial_append", prog(PARTIALS, "pushes"), calls(3, fresh), watch=watch)
    run_case(case, backend)


IDENTITY = """
import json
import torch

TRAIN = "train-mode"

def f(x, mode):
    return x * (2.0 if mode is TRAIN else 3.0)
"""


@backends()
def test_identity_of_equal_strings(backend):
    same = Call(lambda env: (torch.rand(2), env.ns.TRAIN))
    equal = Call(lambda env: (torch.rand(2), env.ns.json.loads('"train-mode"')))
    run_case(Case("identity_of_strings", prog(IDENTITY), [same, same, equal, same]), backend)


MODULE_TREE = """
import copy
import torch

torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Dropout(0.5))

def f(x):
    keys = list(m.state_dict())
    kept = {k: v.clone() for k, v in m.state_dict().items()}
    return m(x), keys, kept, repr(m), m[1].extra_repr(), m.get_parameter("0.bias").requires_grad
"""


def add_hook(env):
    env.ns.m.register_state_dict_post_hook(lambda mod, sd, prefix, meta: sd.pop(prefix + "0.bias"))


@backends()
def test_module_trees_read_by_torchs_python(backend):
    m_eval = [execg("m.eval()"), *calls(2, fresh)]
    script = [*calls(2, fresh), *m_eval, execg("m.register_buffer('scale', torch.ones(1))")]
    script += [*calls(2, fresh), execg("m[1].p = 0.2"), Call(fresh)]
    script += [execg("m.append(torch.nn.ReLU())"), Call(fresh)]
    script += [execg("m[0].bias.requires_grad_(False)"), Call(fresh)]
    script += [execg("m._non_persistent_buffers_set.add('scale')"), Call(fresh)]
    script += [Do(add_hook, "a state-dict post hook"), Call(fresh)]
    run_case(Case("module_tree", prog(MODULE_TREE), script, min_hits=3), backend)


COPIED = """
import copy
import torch

torch.manual_seed(0)
m = torch.nn.Linear(3, 3)
m.k = 1

def f(x):
    twin = copy.deepcopy(m)
    return x * twin.k, len(list(twin.parameters()))
"""


@backends()
def test_a_module_deep_copied_inside(backend):
    script = [*calls(2, fresh), execg("m.k = 2"), Call(fresh)]
    script += [
        execg("m.register_parameter('extra', torch.nn.Parameter(torch.ones(1)))"),
        Call(fresh),
    ]
    run_case(Case("deepcopy_module", prog(COPIED), script), backend)


HANDED_PRINT = """
import contextlib
import torch

def f(x, rows):
    list(map(print, rows))
    with contextlib.ExitStack() as stack:
        stack.callback(print, "done")
        return x * 2
"""


@backends()
def test_print_handed_to_c_code(backend):
    script = [Call(lambda env: (torch.rand(2), ["a", "b"])) for _ in range(3)]
    run_case(Case("handed_print", prog(HANDED_PRINT), script), backend)


ENVIRONMENT = """
import os
import torch

def f(x):
    env = dict(os.environ)
    merged = {**os.environ}
    return x * ("FG_CLASS61_FLAG" in env), x * ("FG_CLASS61_FLAG" in merged)
"""


@backends()
def test_the_environment_copied_inside(backend, monkeypatch):
    monkeypatch.delenv("FG_CLASS61_FLAG", raising=False)
    flag = Do(lambda env: os.environ.__setitem__("FG_CLASS61_FLAG", "1"), "set FG_CLASS61_FLAG")
    script = [*calls(2, fresh), flag, *calls(2, fresh)]
    run_case(Case("environment_copied", prog(ENVIRONMENT), script, min_hits=2), backend)
    monkeypatch.delenv("FG_CLASS61_FLAG", raising=False)
