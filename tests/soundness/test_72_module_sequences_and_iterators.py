"""Class 72: sequences of modules read by torch's Python; iterators handed to itertools.

Found by the sixteenth session's probes (F302, F303):

- A ``ModuleList`` / ``Sequential`` / ``ParameterList`` sliced (``self.layers[1:]``),
  listed, summed, star-unpacked, mapped or paired in the forward: torch's own
  Python (``__getitem__`` of a slice, ``__iter__`` called from C) read how many
  items it holds, and the guard checked the items it had by path, not their
  number: a layer appended between calls was never run by replays.
- ``itertools.starmap(operator.mul, zip(WEIGHTS, losses))``, ``islice(d.values(),
  1)``, ``accumulate(iter(xs))``: an itertools constructor handed an iterator the
  call made over outside data did not guard that data (``map`` / ``sum`` did).
"""

from __future__ import annotations

from functools import partial

import pytest
import torch
from harness import Case, Do, calls, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="seq72")

GROWING = """
import itertools
import torch

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Linear(4, 4) for _ in range(3)])
        self.ps = torch.nn.ParameterList([torch.nn.Parameter(torch.ones(4)) for _ in range(3)])

    def forward(self, x):
        return {FORWARD}

net = Net()
"""

FORWARDS = {
    "slice": "sum(layer(x) for layer in self.layers[1:])",
    "reversed_slice": "sum(layer(x) for layer in self.layers[::-1])",
    "last_two": "sum(layer(x) for layer in self.layers[-2:])",
    "listed": "sum(layer(x) for layer in list(self.layers))",
    "mapped": "sum(map(lambda layer: layer(x), self.layers))",
    "paired": "sum(a(x) - b(x) for a, b in itertools.pairwise(self.layers))",
    "summed_parameters": "x + sum(self.ps)",
    "star_unpacked": "x + torch.stack([*self.ps]).sum(0)",
    "counted": "x * len(list(self.layers))",
}


def _grow(env):
    env.ns.net.layers.append(torch.nn.Linear(4, 4))
    env.ns.net.ps.append(torch.nn.Parameter(torch.full((4,), 2.0)))


@pytest.mark.parametrize("name", sorted(FORWARDS))
def test_a_sequence_of_modules_grown_between_calls(name):
    source = GROWING.replace("{FORWARD}", FORWARDS[name])
    build = shared_prog(source, target="net", name=f"seq72{name}")
    step = lambda env: (torch.randn(2, 4),)
    script = [*calls(3, step), Do(_grow, "append a layer"), *calls(3, step)]
    run_case(Case(f"grown_{name}", build, script, min_hits=3), "eager")


ITERTOOLS = """
import itertools
import operator
import torch

WEIGHTS = [1.0, 0.5]
D = {"a": 1.0, "b": 2.0}
XS = [1.0, 2.0, 3.0]

def f(x):
    losses = [x.sum(), x.mean()]
    weighted = sum(itertools.starmap(operator.mul, zip(WEIGHTS, losses)))
    first = next(itertools.islice(D.values(), 1))
    running = list(itertools.accumulate(iter(XS)))[-1]
    return weighted * first + running
"""


def _change(env):
    env.ns.WEIGHTS[1] = 2.0
    env.ns.D["a"] = 3.0
    env.ns.XS.append(4.0)


def test_itertools_handed_iterators_over_outside_data():
    step = lambda env: (torch.randn(3),)
    script = [*calls(3, step), Do(_change, "change the data"), *calls(3, step)]
    run_case(Case("itertools_iterators", prog(ITERTOOLS), script, min_hits=3), "eager")


PARAMETER_DICT = """
import torch

torch.manual_seed(0)

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.pd = torch.nn.ParameterDict({"w": torch.nn.Parameter(torch.randn(4))})

    def forward(self, x):
        {FORWARD}

net = Net()
"""

OPTIONAL_ENTRIES = {
    "get": (
        "b = self.pd.get('bias')\n        return x * self.pd['w'] if b is None else x + b",
        "net.pd['bias'] = torch.nn.Parameter(torch.full((4,), 10.0))",
    ),
    "get_with_default": ("return x * self.pd.get('scale', 1.0)", "net.pd['scale'] = 7.0"),
    "setdefault": ("return x * self.pd.setdefault('gain', 1.5)", "net.pd['gain'] = 3.0"),
}


@pytest.mark.parametrize("name", sorted(OPTIONAL_ENTRIES))
def test_an_optional_entry_of_a_parameter_dict(name):
    # F308: ``ParameterDict.get`` / ``setdefault`` test the key in torch's Python,
    # unobserved: an entry added between calls was not seen by replays.
    from harness import execg

    forward, change = OPTIONAL_ENTRIES[name]
    build = shared_prog(PARAMETER_DICT.replace("{FORWARD}", forward), "net", name=f"pd72{name}")
    step = lambda env: (torch.randn(2, 4),)
    script = [*calls(3, step), execg(change), *calls(2, step)]
    run_case(Case(f"parameter_dict_{name}", build, script), "eager")
