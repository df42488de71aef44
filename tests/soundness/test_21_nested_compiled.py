"""Class 21: a compiled function called inside another compiled function.

Programs compile pieces of themselves (a helper, a submodule, a method) and
are then compiled whole.  The outer monitoring run must see what the inner
code reads: run as its own replay, the inner guard read a global out of the
outer run's sight, and the outer record kept the value it saw (a global
changed between calls gave the old answer).
"""

from __future__ import annotations

from functools import partial

from harness import Case, backends, calls, execg, mat, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="nested21")


INNER_FUNCTION = """
import torch
import fullgraph.runtime

state = {"k": 1.0}

def scale(x):
    return x * state["k"]

inner = fullgraph.runtime.compile(scale, backend="eager")

def f(x):
    return inner(x) + 1
"""


@backends()
def test_inner_compiled_function_reads_a_global(backend):
    run_case(
        Case(
            "inner_compiled_function_reads_a_global",
            prog(INNER_FUNCTION),
            [
                # The inner function is recorded first, on its own.
                execg("inner(torch.ones(2)); inner(torch.ones(2))"),
                *calls(2, mat),
                execg("state['k'] = 5.0"),
                *calls(2, mat),
            ],
            min_hits=2,
        ),
        backend,
    )


INNER_MODULE = """
import torch
import fullgraph.runtime

class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = fullgraph.runtime.compile(torch.nn.Linear(4, 4), backend="eager")
        self.scale = 1.0

    @fullgraph.runtime.compile(backend="eager")
    def gate(self, x):
        return torch.sigmoid(x) * self.scale

    def forward(self, x):
        return self.gate(self.proj(x))

block = Block()
"""


@backends()
def test_compiled_submodule_and_method_inside_a_compiled_module(backend):
    run_case(
        Case(
            "compiled_submodule_and_method_inside_a_compiled_module",
            prog(INNER_MODULE, "block"),
            [
                *calls(2, mat),
                execg("block.scale = 3.0"),
                *calls(2, mat),
                execg("block.proj.fn.weight.data.mul_(2.0)"),
                *calls(2, mat),
            ],
            min_hits=3,
        ),
        backend,
    )
