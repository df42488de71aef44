"""Class 29: tensors given other memory or another shape in place.

``x.set_(y)`` (which torch's function modes never see), ``swap_tensors``,
and ``resize_`` of a tensor from outside change what a tensor is, not what it
holds: no graph expresses it, and a guard at entry sees the metadata from
before.  Each program is called several times with fresh data; every call
must give eager's result and leave eager's state (such calls run eagerly).
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Case, backends, calls, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="storage29")


def counter(env):
    env.ns.CALLS[0] += 1
    n = float(env.ns.CALLS[0])
    return torch.zeros(2), torch.full((2,), n)


SET_ARGUMENT = """
import torch
CALLS = [0]

def f(x, y):
    x.set_(y)
    return x + 1, x.data_ptr() == y.data_ptr()
"""

SET_MADE = """
import torch
CALLS = [0]

def f(x, y):
    t = torch.zeros(2)
    t.set_(y)
    return t * 3 + x
"""

BUFFER = """
import torch
CALLS = [0]

class UseLatest(torch.nn.Module):
    def __init__(self, mode):
        super().__init__()
        self.mode = mode
        self.register_buffer("buf", torch.zeros(2))

    def forward(self, x, y):
        if self.mode == "set_":
            self.buf.set_(y)
        else:
            torch.utils.swap_tensors(self.buf, y)
        return self.buf * 2 + x

set_model = UseLatest("set_")
swap_model = UseLatest("swap")
"""

RESIZE = """
import torch
CALLS = [0]

class Accumulator(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("total", torch.zeros(2))

    def forward(self, x, y):
        if self.total.numel() < 4:
            self.total.resize_(4)
            self.total.zero_()
        self.total.add_(y.sum())
        return self.total.clone()

acc = Accumulator()
"""


@backends()
def test_set_on_an_argument(backend):
    run_case(Case("set_on_an_argument", prog(SET_ARGUMENT), calls(4, counter)), backend)


@backends()
def test_set_on_a_tensor_the_function_made(backend):
    run_case(Case("set_on_a_tensor_the_function_made", prog(SET_MADE), calls(4, counter)), backend)


@backends()
def test_set_on_a_buffer(backend):
    run_case(Case("set_on_a_buffer", prog(BUFFER, "set_model"), calls(4, counter)), backend)


@backends()
def test_swap_tensors_with_a_buffer(backend):
    run_case(
        Case("swap_tensors_with_a_buffer", prog(BUFFER, "swap_model"), calls(4, counter)), backend
    )


@backends()
def test_resize_of_a_buffer(backend):
    run_case(Case("resize_of_a_buffer", prog(RESIZE, "acc"), calls(5, counter)), backend)
