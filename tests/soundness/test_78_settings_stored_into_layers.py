"""Class 78: a number the function stores into a torch layer's setting, then calls it.

Found by the seventeenth session's module-machinery probe (F319): ``drop.p = p``,
``bn.momentum = m``, ``act.negative_slope = S`` (a schedule written into a layer
before calling it).  Once the number had varied it was lifted, and the guard
checked the layer's setting as the call found it (the previous call's store)
against the value this run stored: a call whose number differed from the
previous call's replayed the previous number, baked into the graph by the
layer.  A setting the call stored is not guarded at entry now; the number stored
is guarded by value (the layer takes it as a constant).
"""

from __future__ import annotations

from functools import partial

import pytest
import torch
from harness import Call, Case, backends, run_case, setg
from harness import prog as shared_prog

prog = partial(shared_prog, name="settings78")

SCHEDULE_FROM_A_GLOBAL = """
import torch

act = torch.nn.LeakyReLU(0.1)
SLOPE = 0.1

def f(x):
    act.negative_slope = SLOPE
    return act(x)
"""


@backends(inductor=True)
def test_a_global_schedule_written_into_a_layer(backend):
    script = []
    for slope in (0.1, 0.1, 0.5, 0.9, 0.2, 0.5, 0.5):
        script += [setg("SLOPE", repr(slope)), Call(lambda env: (torch.linspace(-1, 1, 6),))]
    watch = lambda env: env.ns.act.negative_slope
    case = Case("global_slope", prog(SCHEDULE_FROM_A_GLOBAL), script, watch=watch, min_hits=2)
    run_case(case, backend)


PROGRAMS = {
    "dropout_probability": """
import torch

drop = torch.nn.Dropout(0.1)

def f(x, v):
    drop.p = v
    return drop(x)
""",
    "batchnorm_momentum": """
import torch

bn = torch.nn.BatchNorm1d(3)

def f(x, v):
    bn.momentum = v
    return bn(x)
""",
    "submodule_setting_in_forward": """
import torch

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.act = torch.nn.CELU(1.0)

    def forward(self, x, v):
        self.act.alpha = v
        return self.act(self.lin(x))

net = Net()

def f(x, v):
    return net(x, v)
""",
}


PROGRAMS["stored_through_the_instance_dict"] = """
import torch

act = torch.nn.LeakyReLU(0.01)

def f(x, v):
    act.__dict__["negative_slope"] = v  # F328: the layer's other name for the slot
    return act(x)
"""


def _state(env):
    ns = env.ns
    if hasattr(ns, "bn"):
        return {"mean": ns.bn.running_mean, "var": ns.bn.running_var, "m": ns.bn.momentum}
    if hasattr(ns, "drop"):
        return ns.drop.p
    if hasattr(ns, "act"):
        return ns.act.negative_slope
    return ns.net.act.alpha


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_an_argument_written_into_a_layer(name):
    values = (0.1, 0.1, 0.5, 0.9, 0.3, 0.2, 0.3)
    shape = (200, 3) if name != "dropout_probability" else (2000,)
    script = [Call(lambda env, v=v: (torch.randn(*shape), v), label=f"{v}") for v in values]
    case = Case(name, prog(PROGRAMS[name]), script, watch=_state, min_hits=2)
    run_case(case, "eager")
