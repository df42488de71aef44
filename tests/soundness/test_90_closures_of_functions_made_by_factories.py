"""Class 90: closure cells of functions a factory made (found 2026-12-07).

F349 (object-model probe): ``property(lambda self: getattr(self, name) * mult[0])``
made by a factory, then ``MULT[0] = 5.0`` between calls.  The function has no
path of its own; the monitor took any code whose file name starts with ``<`` for
generated code (a dataclass's ``__init__``) whose cells never change, and a
REPL's ``<stdin>``, an IPython cell, ``exec`` of a string (and every program of
this harness) are such code: the cell went unguarded and replays kept the old
multiplier.  Only a dataclass's ``__create_fn__`` methods count as generated now.

F350 (cost, found with it): in a file, the same property was refused ("reads a
closure variable the monitor has no path to"), every call eager.  A function on
the class of an object the run has a path for is found there
(``type(cfg).__mro__[0].__dict__['scale'].fget``).
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Case, backends, calls, execg, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="factories90")

PROPERTY_FROM_A_FACTORY = """
import torch

def alias(name, mult):
    return property(lambda self: getattr(self, name) * mult[0])

MULT = [2.0]

class Cfg:
    scale = alias("_s", MULT)

    def __init__(self):
        self._s = 1.0

cfg = Cfg()

def f(x):
    return x * cfg.scale
"""


def _vector(env):
    return (torch.randn(3),)


@backends()
def test_a_cell_of_a_property_a_factory_made(backend):
    script = [*calls(3, _vector), execg("MULT[0] = 5.0"), *calls(3, _vector)]
    run_case(Case("property_cell", prog(PROPERTY_FROM_A_FACTORY), script, min_hits=3), backend)


ALIASED_SIZE_ON_A_MODULE = """
import torch

def alias(name):
    return property(lambda self: getattr(self, name))

class Base(torch.nn.Module):
    hidden_size = alias("d_model")

class Net(Base):
    def __init__(self):
        super().__init__()
        self.d_model = 2.0

    def forward(self, x):
        return x * self.hidden_size

net = Net()
"""


@backends()
def test_an_alias_property_on_a_base_class_replays(backend):
    script = [*calls(3, _vector), execg("net.d_model = 3.0"), *calls(3, _vector)]
    run_case(
        Case("alias", prog(ALIASED_SIZE_ON_A_MODULE, target="net"), script, min_hits=3), backend
    )
