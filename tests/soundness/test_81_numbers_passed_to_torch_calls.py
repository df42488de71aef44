"""Class 81: numbers that vary, passed as value arguments of torch calls.

``x * s`` lifted a varying ``s`` into the graph, but the same number passed to a
torch call (``x.clamp(max=s)``, ``x.mul(s)``, ``torch.full(shape, s)``,
``F.leaky_relu(x, s)``, ``x.masked_fill(m, s)``) was guarded by value: a record
per value (left open by the sixteenth session).  Those calls lift it now
(``monitor/lifted_arguments.py``); the op gets the Python number back, so
dtypes follow eager's promotion.  ``torch.lerp`` stays guarded by value (its
Inductor decomposition branches on the weight).
"""

from __future__ import annotations

from functools import partial

import pytest
import torch
from harness import Call, Case, backends, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="calls81")

PROGRAMS = {
    "clamp_and_mul": "def f(x, s, n):\n    return x.clamp(max=s) + x.mul(s) - x.add(n)\n",
    "fill_values": (
        "def f(x, s, n):\n"
        "    return torch.full((5,), s) + x.masked_fill(x < 0, s), torch.full((2,), n)\n"
    ),
    "activations": (
        "import torch.nn.functional as F\n\n"
        "def f(x, s, n):\n    return F.leaky_relu(x, s) + F.elu(x, s) + torch.where(x > 0, x, s)\n"
    ),
    "int_tensor_arithmetic": (
        "def f(x, s, n):\n    ids = torch.arange(4)\n    return ids.mul(n), ids.add(n).div(n), ids.mul(s)\n"
    ),
    "in_place_on_the_argument": "def f(x, s, n):\n    x.mul_(s).clamp_(min=-s)\n    return x.sum()\n",
    "lerp_stays_by_value": "def f(x, s, n):\n    return torch.lerp(x, x * 2, s)\n",
}

VALUES = [(0.5, 2), (0.6, 3), (0.7, 5), (0.8, 7), (1.5, 9), (0.25, 4)]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@backends(inductor=True)
def test_a_number_passed_to_a_torch_call(name, backend):
    if backend == "inductor" and name not in ("clamp_and_mul", "fill_values"):
        pytest.skip("one compile per record: the Inductor leg keeps two programs")
    script = [
        Call(lambda env, s=s, n=n: (torch.randn(5), s, n), label=f"s={s} n={n}") for s, n in VALUES
    ]
    replays = 0 if name == "lerp_stays_by_value" else 3
    case = Case(name, prog("import torch\n\n" + PROGRAMS[name]), script, min_hits=replays)
    result = run_case(case, backend)
    if name == "lerp_stays_by_value":
        assert result.hits == 0  # a record per value: the weight is guarded
