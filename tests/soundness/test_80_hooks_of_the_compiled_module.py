"""Class 80: hooks of the compiled module that see a number argument which varies.

Found by two of the seventeenth session's probes (F322).  Once a number argument
of a compiled module had varied, the forward's parameter got a symbol by
position, and the guard checked only the number's type.  The module's forward
hooks get the arguments in a tuple torch builds, where no symbol follows: a
forward hook's ``out * args[1]`` took the recorded number as a constant, and a
pre-hook's ``(x, max(t, 1.0))`` replaced the number the forward's symbol stood
for.  A compiled module with forward hooks (its own or global ones) keeps its
arguments guarded by value.
"""

from __future__ import annotations

from functools import partial

import pytest
import torch
from harness import Call, Case, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="hooks80")

NET = """
import torch

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x, t):
        return self.lin(x) / t

f = Net()
"""

HOOKS = {
    "pre_hook_clamps_the_number": """
def clamp_t(module, args):
    x, t = args
    return (x, max(t, 1.0))

f.register_forward_pre_hook(clamp_t)
""",
    "forward_hook_reads_the_number": """
def scale_out(module, args, out):
    return out * args[1]

f.register_forward_hook(scale_out)
""",
    "hook_with_kwargs_records_the_number": """
SEEN = []

def note(module, args, kwargs, out):
    SEEN.append(kwargs.get("t", args[1] if len(args) > 1 else None))
    return out + 1

f.register_forward_hook(note, with_kwargs=True)
""",
}


def _state(env):
    return list(getattr(env.ns, "SEEN", []))


@pytest.mark.parametrize("name", sorted(HOOKS))
def test_a_hook_sees_the_number_of_this_call(name):
    script = [
        Call(lambda env, t=t: (torch.randn(2, 4), t), label=f"t={t}")
        for t in (2.0, 3.0, 0.5, 0.5, 2.0, 0.25)
    ]
    case = Case(name, prog(NET + HOOKS[name], target="f"), script, watch=_state, min_hits=2)
    run_case(case, "eager")
