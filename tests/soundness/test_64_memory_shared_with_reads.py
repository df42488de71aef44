"""Class 64: memory an input updated in place shares with what a callout reads.

Found by the fifteenth session's probe of outputs and aliasing (F280, F281):

- ``x.add_(1); return y.item()`` with ``y = x[0]``: the read is a data check the
  mock makes in front of the graph, and only graph inputs were checked to share no
  memory with the updated ``x``, so the replay read ``y`` before the update.
- A numpy array handed in beside the tensor it views (``arr = x.numpy()``), or
  kept by a module as a view of its buffer: its contents were compared at entry,
  before the graph updated them.
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Call, Case, backends, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="memory64")

READ_AFTER_UPDATE = """
import torch

def f(x, y):
    x.add_(1)
    return y.tolist(), str(y)
"""


def apart(env):
    return torch.zeros(3), torch.zeros(2)


def view(env):
    x = torch.zeros(3)
    return x, x[:2]


@backends()
def test_a_value_read_of_a_view_of_an_updated_input(backend):
    script = [Call(apart), Call(apart), Call(view), Call(apart), Call(view)]
    run_case(Case("read_of_a_view", prog(READ_AFTER_UPDATE), script, min_hits=1), backend)


NUMPY_VIEW = """
import numpy as np
import torch

def f(x, arr):
    x.add_(1)
    return float(arr.sum())

class Counter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros(1))
        self.count_np = self.count.numpy()

    def forward(self, x):
        self.count.add_(1)
        return x * float(self.count_np[0])

counter = Counter()
"""


def separate_array(env):
    return torch.zeros(3), env.ns.np.zeros(3, dtype=env.ns.np.float32)


def array_view(env):
    x = torch.zeros(3)
    return x, x.numpy()


@backends()
def test_a_numpy_view_of_an_updated_input(backend):
    script = [Call(separate_array), Call(separate_array), Call(array_view), Call(array_view)]
    run_case(Case("numpy_view_argument", prog(NUMPY_VIEW), script, min_hits=1), backend)


@backends()
def test_a_module_reading_a_numpy_view_of_its_buffer(backend):
    script = [Call(lambda env: (torch.ones(1),)) for _ in range(4)]
    run_case(Case("numpy_view_of_a_buffer", prog(NUMPY_VIEW, "counter"), script), backend)
