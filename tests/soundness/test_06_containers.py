"""Class 6: containers and callables whose contents change.

``ModuleList`` / ``ModuleDict`` / list arguments gaining or losing items or
changing values, also when read through ``zip`` (strict or not),
``enumerate``, ``map``, ``reversed``, ``itertools.islice``; a
``functools.partial`` swapped; a global function or lambda swapped; a class
attribute changed.
"""

from __future__ import annotations

import functools
import operator

import torch
from harness import Call, Case, Do, Env, backends, calls, load_program, run_case


def vec(env):
    return torch.randn(2, 4)


STACK = """
import torch

class Stack(torch.nn.Module):
    def __init__(self, depth):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(4, 4) for _ in range(depth))

    def forward(self, x):
        for layer in self.layers:
            x = torch.tanh(layer(x))
        return x
"""


def build_stack():
    torch.manual_seed(0)
    ns = load_program(STACK, "stack")
    return Env(ns=ns, target=ns.Stack(2))


def grow(env):
    torch.manual_seed(11)
    env.target.layers.append(torch.nn.Linear(4, 4))


def shrink(env):
    del env.target.layers[0]


def replace_first(env):
    torch.manual_seed(12)
    env.target.layers[0] = torch.nn.Linear(4, 4)


@backends(inductor=True)
def test_module_list_grows_and_shrinks(backend):
    run_case(
        Case(
            "module_list_grows_and_shrinks",
            build_stack,
            [
                *calls(2, vec),
                Do(grow, "append a layer"),
                *calls(2, vec),
                Do(shrink, "del layers[0]"),
                *calls(2, vec),
                Do(replace_first, "layers[0] = new Linear"),
                Call(vec),
            ],
        ),
        backend,
    )


HEADS = """
import torch

class MultiHead(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = torch.nn.ModuleDict({"cls": torch.nn.Linear(4, 2), "reg": torch.nn.Linear(4, 1)})

    def forward(self, x):
        return {name: head(x) for name, head in self.heads.items()}
"""


def build_heads():
    torch.manual_seed(0)
    ns = load_program(HEADS, "heads")
    return Env(ns=ns, target=ns.MultiHead())


def add_head(env):
    torch.manual_seed(13)
    env.target.heads["aux"] = torch.nn.Linear(4, 3)


def swap_head(env):
    torch.manual_seed(14)
    env.target.heads["cls"] = torch.nn.Sequential(torch.nn.Linear(4, 2), torch.nn.ReLU())


@backends()
def test_module_dict_items_change(backend):
    run_case(
        Case(
            "module_dict_items_change",
            build_heads,
            [
                *calls(2, vec),
                Do(add_head, "add head 'aux'"),
                *calls(2, vec),
                Do(swap_head, "replace head 'cls'"),
                *calls(2, vec),
            ],
        ),
        backend,
    )


def build_weighted_sum():
    def weighted(xs, ws):
        total = 0
        for x, w in zip(xs, ws):
            total = total + x * w
        return total

    return Env(target=weighted)


def pairs(n, m):
    def make(env):
        return [torch.randn(3) for _ in range(n)], [float(i + 1) for i in range(m)]

    make.__name__ = f"{n} tensors, {m} weights"
    return make


@backends()
def test_zip_of_lists_changing_length(backend):
    run_case(
        Case(
            "zip_of_lists_changing_length",
            build_weighted_sum,
            [
                Call(pairs(2, 2)),
                Call(pairs(2, 2)),
                Call(pairs(3, 3), label="3/3"),
                Call(pairs(3, 2), label="3/2"),
                Call(pairs(2, 3), label="2/3"),
                Call(pairs(2, 2)),
            ],
        ),
        backend,
    )


@backends()
def test_list_of_float_weights_changing_values(backend):
    def weights(values):
        def make(env):
            return [torch.ones(3), torch.ones(3)], list(values)

        return make

    run_case(
        Case(
            "list_of_float_weights_changing_values",
            build_weighted_sum,
            [
                Call(weights([1.0, 2.0])),
                Call(weights([1.0, 2.0])),
                Call(weights([0.5, 2.0])),
                Call(weights([3.0, -1.0])),
                Call(weights([1.0, 2.0])),
            ],
        ),
        backend,
    )


def build_strict_zip():
    def pairwise_dist(xs, ys):
        return [torch.dist(x, y) for x, y in zip(xs, ys, strict=True)]

    return Env(target=pairwise_dist)


@backends()
def test_strict_zip_raises_on_mismatch(backend):
    def lists(n, m):
        return lambda env: ([torch.randn(3) for _ in range(n)], [torch.randn(3) for _ in range(m)])

    run_case(
        Case(
            "strict_zip_raises_on_mismatch",
            build_strict_zip,
            [
                Call(lists(2, 2)),
                Call(lists(2, 2)),
                Call(lists(2, 3), label="lengths differ"),
                Call(lists(2, 2)),
            ],
        ),
        backend,
    )


ITERATORS = """
import itertools
import torch

scales = [1.0, 2.0, 3.0]
offsets = [torch.zeros(3), torch.ones(3), torch.full((3,), 2.0)]

def combine(x):
    out = []
    for i, s in enumerate(reversed(scales)):
        out.append(x * s + i)
    firsts = list(itertools.islice(offsets, 2))
    shifted = list(map(lambda o: o + x, firsts))
    return torch.stack(out).sum(0) + sum(shifted)
"""


def build_iterators():
    ns = load_program(ITERATORS, "iterators")
    return Env(ns=ns, target=ns.combine)


def x3(env):
    return torch.randn(3)


@backends()
def test_enumerate_reversed_islice_map_over_globals(backend):
    def set_scale(env):
        env.ns.scales[0] = 10.0

    def grow_scales(env):
        env.ns.scales.append(4.0)

    def swap_offset(env):
        env.ns.offsets[1] = torch.full((3,), -5.0)

    run_case(
        Case(
            "enumerate_reversed_islice_map_over_globals",
            build_iterators,
            [
                *calls(2, x3),
                Do(set_scale, "scales[0] = 10"),
                *calls(2, x3),
                Do(grow_scales, "scales.append"),
                *calls(2, x3),
                Do(swap_offset, "offsets[1] = new tensor"),
                *calls(2, x3),
            ],
        ),
        backend,
    )


PARTIAL = """
import functools
import torch
import torch.nn.functional as F

act = functools.partial(F.leaky_relu, negative_slope=0.1)

def block(x):
    return act(x * 3)
"""


def build_partial():
    ns = load_program(PARTIAL, "partial")
    return Env(ns=ns, target=ns.block)


@backends()
def test_partial_swapped(backend):
    def swap(env):
        env.ns.act = env.ns.functools.partial(env.ns.F.leaky_relu, negative_slope=0.5)

    run_case(
        Case(
            "partial_swapped",
            build_partial,
            [*calls(2, x3), Do(swap, "act = partial(slope=0.5)"), *calls(2, x3)],
        ),
        backend,
    )


GLOBAL_FN = """
import torch

def activation(x):
    return x.relu()

def layer(x):
    return activation(x) + 1
"""


def build_global_fn():
    ns = load_program(GLOBAL_FN, "global_fn")
    return Env(ns=ns, target=ns.layer)


@backends()
def test_global_function_swapped_for_lambda(backend):
    def swap(env):
        env.ns.activation = lambda x: x.tanh()

    def swap_again(env):
        env.ns.activation = lambda x: x.sigmoid()

    run_case(
        Case(
            "global_function_swapped_for_lambda",
            build_global_fn,
            [
                *calls(2, x3),
                Do(swap, "activation = lambda (tanh)"),
                *calls(2, x3),
                Do(swap_again, "activation = another lambda (sigmoid)"),
                *calls(2, x3),
            ],
        ),
        backend,
    )


CLASS_ATTR = """
import torch

class Config:
    scale = 2.0
    clip = None

class Scaler(torch.nn.Module):
    def forward(self, x):
        y = x * Config.scale
        if Config.clip is not None:
            y = y.clamp(-Config.clip, Config.clip)
        return y
"""


def build_class_attr():
    ns = load_program(CLASS_ATTR, "class_attr")
    return Env(ns=ns, target=ns.Scaler())


@backends(inductor=True)
def test_class_attribute_changed(backend):
    def set_scale(env):
        env.ns.Config.scale = 5.0

    def set_clip(env):
        env.ns.Config.clip = 1.0

    run_case(
        Case(
            "class_attribute_changed",
            build_class_attr,
            [
                *calls(2, x3),
                Do(set_scale, "Config.scale = 5"),
                *calls(2, x3),
                Do(set_clip, "Config.clip = 1"),
                *calls(2, x3),
            ],
        ),
        backend,
    )


INSTANCE_VS_CLASS = """
import torch

class Gate(torch.nn.Module):
    threshold = 0.0

    def forward(self, x):
        return (x > self.threshold).float() * x
"""


def build_gate():
    ns = load_program(INSTANCE_VS_CLASS, "gate")
    return Env(ns=ns, target=ns.Gate())


@backends()
def test_instance_attribute_shadows_class_attribute(backend):
    def shadow(env):
        env.target.threshold = 0.5

    def set_class(env):
        env.ns.Gate.threshold = -1.0

    def unshadow(env):
        del env.target.threshold

    run_case(
        Case(
            "instance_attribute_shadows_class_attribute",
            build_gate,
            [
                *calls(2, x3),
                Do(set_class, "Gate.threshold = -1"),
                Call(x3),
                Do(shadow, "self.threshold = 0.5"),
                *calls(2, x3),
                Do(unshadow, "del self.threshold"),
                *calls(2, x3),
            ],
        ),
        backend,
    )


# Callables passed as arguments (found by the peer suite, bench/peer_functions.py).


def _times(p, q=1.0):
    return p * q


def build_apply():
    def apply(fn, x):
        return fn(x)

    return Env(target=apply)


@backends()
def test_partial_argument_with_other_keywords(backend):
    def with_q(q):
        return lambda env: (functools.partial(_times, q=q), torch.randn(3))

    run_case(
        Case(
            "partial_argument_keywords",
            build_apply,
            [Call(with_q(3.0)), Call(with_q(3.0)), Call(with_q(5.0)), Call(with_q(3.0))],
        ),
        backend,
    )


@backends()
def test_builtin_and_type_arguments_swapped(backend):
    def with_fn(fn):
        return lambda env: (fn, torch.tensor(2.5))

    run_case(
        Case(
            "builtin_and_type_arguments",
            build_apply,
            [
                Call(with_fn(torch.sin)),
                Call(with_fn(torch.sin)),
                Call(with_fn(torch.cos)),
                Call(with_fn(float)),
                Call(with_fn(int)),
                Call(with_fn(operator.neg)),
            ],
        ),
        backend,
    )
