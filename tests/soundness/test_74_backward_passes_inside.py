"""Class 74: backward passes inside the compiled function, under Inductor.

Found by the sixteenth session's Inductor probe (F305): a compiled graph is one
autograd node for all its outputs, so

- a second ``backward()`` inside the function (actor and critic losses, the DCGAN
  tutorial's discriminator then generator step) ran through that node again after
  the first had freed it: every call after the first raised "Trying to backward
  through the graph a second time";
- ``torch.autograd.grad(score, feats)`` of a tensor the graph computed (Grad-CAM)
  raised "appears to not have been used in the graph", and
  ``loss.backward(inputs=[h])`` / ``autograd.grad(..., allow_unused=True)`` gave
  ``None`` / zeros, replayed silently from then on.

The graphs such a pass runs through keep per-op autograd (their ops as recorded);
a single ``loss.backward()`` keeps its compiled graph.
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Case, backends, calls, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="backward74")

ACTOR_CRITIC = """
import torch

torch.manual_seed(0)
actor = torch.nn.Linear(4, 2)
critic = torch.nn.Linear(4, 1)
opt_a = torch.optim.SGD(actor.parameters(), lr=0.1)
opt_c = torch.optim.SGD(critic.parameters(), lr=0.1)

def f(s, ret):
    logp = actor(s).log_softmax(-1)[:, 0]
    v = critic(s).squeeze(-1)
    critic_loss = (v - ret).pow(2).mean()
    actor_loss = -(logp * ret).mean()
    critic_loss.backward()
    actor_loss.backward()
    opt_a.step()
    opt_c.step()
    opt_a.zero_grad()
    opt_c.zero_grad()
    return actor_loss.detach(), critic_loss.detach()
"""


@backends(inductor=True)
def test_two_backward_passes_in_one_step(backend):
    script = calls(4, lambda env: (torch.randn(5, 4), torch.randn(5)))
    run_case(Case("actor_critic", prog(ACTOR_CRITIC), script, min_hits=2), backend)


GRADIENTS_OF_INTERMEDIATES = """
import torch

torch.manual_seed(0)
backbone = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU())
head = torch.nn.Sequential(
    torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(4, 5)
)

def f(x):
    feats = backbone(x)
    score = head(feats).max(1).values.sum()
    g, = torch.autograd.grad(score, feats, retain_graph=True)
    cam = (g.mean((2, 3), keepdim=True) * feats).sum(1).relu()
    h = feats.flatten(1)
    loss = h.pow(2).mean()
    loss.backward(inputs=[h])
    return cam.detach(), h.grad
"""


@backends(inductor=True)
def test_gradients_of_tensors_the_graph_computed(backend):
    script = calls(4, lambda env: (torch.randn(2, 3, 6, 6),))
    run_case(Case("intermediates", prog(GRADIENTS_OF_INTERMEDIATES), script, min_hits=2), backend)
