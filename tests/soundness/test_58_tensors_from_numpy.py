"""Class 58: tensors made from numpy arrays inside the function.

``torch.tensor(arr)`` and ``torch.as_tensor(arr)`` were an internal error of
the capture (the array is no graph constant) and ``torch.from_numpy(arr)``
gave a tensor no torch function mode sees: each made the function fall back
for good.  They are now made eagerly on every call (a callout), so the array's
current values, and for ``from_numpy`` its memory, are the replay's (F257).
The array changes between calls, and ``from_numpy``'s tensor is changed in
place (the array with it).
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Call, Case, backends, execg, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="numpy58")

FROM_ARRAYS = """
import numpy as np
import torch

table = np.arange(3.0)
scale = np.ones(3)

def f(x):
    t = torch.from_numpy(scale)
    t.mul_(2)
    return x * torch.tensor(table) + torch.as_tensor(table) * t
"""


def watch(env):
    return {"table": env.ns.table.tolist(), "scale": env.ns.scale.tolist()}


@backends()
def test_tensors_from_arrays_follow_the_arrays(backend):
    # The function doubles ``scale`` on every call, and a numpy array's contents are
    # guarded as the call met them (F318: the program may read them as numbers too),
    # so no call replays another's record; the replays are asserted below.
    fresh = Call(lambda env: (torch.randn(3),))
    script = [fresh, fresh, execg("table[0] = 7.0"), fresh, fresh, execg("scale[:] = 0.5"), fresh]
    case = Case("tensors_from_arrays", prog(FROM_ARRAYS), script, watch=watch)
    run_case(case, backend)


@backends()
def test_tensors_from_unchanged_arrays_replay(backend):
    program = FROM_ARRAYS.replace("    t.mul_(2)\n", "")
    fresh = Call(lambda env: (torch.randn(3),))
    script = [fresh, fresh, fresh, execg("table[0] = 7.0"), fresh, fresh, fresh]
    case = Case("tensors_from_unchanged_arrays", prog(program), script, watch=watch, min_hits=3)
    run_case(case, backend)
