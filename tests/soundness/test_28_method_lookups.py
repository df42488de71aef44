"""Class 28: methods found on a class, patched or shadowed between calls.

``p.act(x)`` loads the function from ``type(p)`` without reading anything of
``p`` itself; ``super().forward(x)`` looks the name up in the classes after
the caller's in the MRO.  Programs on plain objects and modules are called,
then a method is replaced on the instance, on its class, on a base class, or
an override is added to a class between the caller and the base; the replay
must see each change, and the unchanged calls must replay.
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Case, backends, calls, execg, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="methods28")


def ones(env):
    return (torch.tensor([-1.0, 2.0]),)


PLAIN = """
import torch

class Base:
    def act(self, x):
        return torch.relu(x)

    def __call__(self, x):
        return self.act(x) + 1

class Block(Base):
    @property
    def factor(self):
        return 2.0

blk = Block()

def f(x):
    return blk.act(x) * blk.factor + blk(x)
"""


@backends()
def test_a_method_shadowed_on_the_instance(backend):
    run_case(
        Case(
            "a_method_shadowed_on_the_instance",
            prog(PLAIN),
            [*calls(2, ones), execg("blk.act = lambda x: x * 100"), *calls(2, ones)],
            min_hits=2,
        ),
        backend,
    )


@backends()
def test_a_method_replaced_on_a_base_class(backend):
    run_case(
        Case(
            "a_method_replaced_on_a_base_class",
            prog(PLAIN),
            [
                *calls(2, ones),
                execg("Base.act = lambda self, x: x * 10"),
                *calls(2, ones),
                execg("Base.__call__ = lambda self, x: x * 0 + 7"),
                *calls(2, ones),
            ],
            min_hits=3,
        ),
        backend,
    )


@backends()
def test_an_override_added_to_the_class(backend):
    run_case(
        Case(
            "an_override_added_to_the_class",
            prog(PLAIN),
            [*calls(2, ones), execg("Block.act = lambda self, x: x - 5"), *calls(2, ones)],
            min_hits=2,
        ),
        backend,
    )


SUPER = """
import torch

class Net(torch.nn.Module):
    def forward(self, x):
        return x + 1

class Middle(Net):
    pass

class Child(Middle):
    def forward(self, x):
        return super().forward(x) * 2

class Scaler:
    def scale(self, x):
        return x * 3

class HalfScaler(Scaler):
    def scale(self, x):
        return super().scale(x) / 2

child = Child()
half = HalfScaler()

def f(x):
    return child(x), half.scale(x)
"""


@backends()
def test_super_finds_the_replaced_base_method(backend):
    run_case(
        Case(
            "super_finds_the_replaced_base_method",
            prog(SUPER),
            [
                *calls(2, ones),
                execg("Net.forward = lambda self, x: x - 100"),
                *calls(2, ones),
                execg("Scaler.scale = lambda self, x: x * 30"),
                *calls(2, ones),
            ],
            min_hits=3,
        ),
        backend,
    )


@backends()
def test_super_finds_an_override_added_in_between(backend):
    run_case(
        Case(
            "super_finds_an_override_added_in_between",
            prog(SUPER),
            [
                *calls(2, ones),
                execg("Middle.forward = lambda self, x: x * 0 + 9"),
                *calls(2, ones),
            ],
            min_hits=2,
        ),
        backend,
    )


INSTANCE_FORWARD_OF_A_LAYER = """
import torch

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)

net = Net()
net.fc.forward = lambda x: x * 0 + 7

def f(model, x):
    return model(x)
"""


@backends()
def test_a_layers_forward_set_on_the_instance(backend):
    # The guard checked the class's forward through the instance lookup, and the
    # instance's lambda too: it could never pass, and every call was a monitoring run.
    run_case(
        Case(
            "layers_forward_set_on_the_instance",
            prog(INSTANCE_FORWARD_OF_A_LAYER),
            [
                *calls(3, lambda env: (env.ns.net, torch.randn(2, 4))),
                execg("net.fc.forward = lambda x: x * 0 + 9"),
                *calls(2, lambda env: (env.ns.net, torch.randn(2, 4))),
                execg("del net.fc.forward"),
                *calls(2, lambda env: (env.ns.net, torch.randn(2, 4))),
            ],
            min_hits=3,
        ),
        backend,
    )
