"""Class 55: a number read before a library call changes it, used after the call.

What was wrong (thirteenth session's training probe): ``lr =
opt.param_groups[0]["lr"]``, then ``sched.step()``, then ``lr`` returned, logged or
used in an EMA update.  Once the number had changed between calls it was lifted
(symbolic), and the mock read its path again at the end: after the step, so each
replay used the next step's lr.  The mock now reads such numbers first, before any
call it makes.  Also: a replayed scheduler step that raised (stepped past
``total_steps``) was made a second time by the run of the program that followed;
that run now raises the replay's error at that call instead.
"""

from __future__ import annotations

import torch
from harness import Call, Case, backends, calls, prog, run_case

LR_READ_BEFORE_THE_STEP = """
import torch

torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
ema = [p.detach().clone() for p in model.parameters()]

def f(x, y):
    lr = opt.param_groups[0]["lr"]
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    sched.step()
    with torch.no_grad():
        for e, p in zip(ema, model.parameters()):
            e += (p - e) * lr
    print(f"lr {lr:.6f}")
    return loss.detach(), lr
"""


def batch(env):
    return torch.randn(5, 4), torch.randn(5, 1)


def training_state(env):
    ns = env.ns
    return {
        "weight": ns.model.weight,
        "ema": list(ns.ema),
        "sched": ns.sched.state_dict(),
    }


@backends()
def test_a_learning_rate_read_before_the_scheduler_steps(backend):
    case = Case(
        "lr_read_before_step",
        prog(LR_READ_BEFORE_THE_STEP),
        calls(6, batch),
        watch=training_state,
        min_hits=2,
    )
    run_case(case, backend)


SCHEDULER_PAST_ITS_END = """
import torch

torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=4)

def f(x, y):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    sched.step()
    return loss.detach()
"""


def scheduler_state(env):
    return {"weight": env.ns.model.weight, "sched": env.ns.sched.state_dict()}


@backends()
def test_a_replayed_scheduler_step_that_raises_is_made_once(backend):
    case = Case(
        "scheduler_past_its_end",
        prog(SCHEDULER_PAST_ITS_END),
        [Call(batch) for _ in range(7)],
        watch=scheduler_state,
    )
    run_case(case, backend)
