"""Class 60: what Inductor's compile does differently from eager, and fullgraph turns off.

Found by the fourteenth session's probe of the Inductor backend (F264, F265):

- AOTAutograd "donates" the buffers the backward saved (frees them as it runs):
  ``loss.backward(retain_graph=True)`` after a replayed call raised "compiled
  with non-empty donated buffers", and no gradient was accumulated (with the
  graph loaded from Inductor's caches, as in a second process).
- Inductor fused a bf16 cast into the next op without rounding: ``y.float()``
  differed from ``y``, and from eager, in the third digit.

Both run under the eager backend too, where they always held.
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Call, Case, backends, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="inductor60")

RETAINED = """
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
"""


def retained_backward(env, out):
    loss = out.pow(2).sum()
    loss.backward(retain_graph=True)
    loss.backward()  # the graph was kept: a second pass accumulates again


def grads(env):
    return {name: p.grad for name, p in env.ns.model.named_parameters()}


@backends(inductor=True)
def test_backward_with_retain_graph_after_replays(backend):
    script = [Call(lambda env: (torch.randn(3, 4),), then=retained_backward) for _ in range(4)]
    case = Case("retain_graph", prog(RETAINED, "model"), script, watch=grads, min_hits=2)
    run_case(case, backend)
    run_case(case, backend)  # compiled again: now loaded from Inductor's caches


BF16 = """
import torch

def f(x):
    # The cast rounds x to bf16; doubling is exact, so eager's numbers are the rounded
    # ones (a product that rounds again may land one bf16 step apart under Inductor).
    y = x.to(torch.bfloat16) * 2.0
    return y, y.float() + 1
"""


@backends(inductor=True)
def test_a_bfloat16_intermediate_is_rounded(backend):
    script = [Call(lambda env: (torch.randn(16) * 100,)) for _ in range(3)]
    run_case(Case("bf16_rounding", prog(BF16), script, min_hits=1), backend)
