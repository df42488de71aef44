"""Class 50: a value the rest of the run depends on, read after ``optimizer.step()``.

What was wrong (F203): ``loss.backward(); opt.step()`` then a branch on tensor data
(``if n_averaged == 0``, as ``AveragedModel.update_parameters`` does): a replay
that missed at the branch had already made the step, and the monitoring run that
followed (handed the step's result, so as not to step twice) computed the forward
again from the stepped weights: the returned loss was the next step's, and a batch
norm's running statistics were updated from it.  The monitor now notes a call that
updates in place a tensor a graph before it read; a record with a mid-guard after
such a call is not reusable (FG207), and the function runs as eager does.  A step
with nothing to decide after it still replays.
"""

from __future__ import annotations

import torch
from harness import Call, Case, backends, calls, execg, prog, run_case

BRANCH_AFTER_THE_STEP = """
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 1), torch.nn.BatchNorm1d(1))
opt = torch.optim.SGD(model.parameters(), lr=0.5)
steps = torch.zeros(())

def f(x):
    opt.zero_grad()
    loss = model(x).pow(2).mean() + model[0].weight.sum()
    loss.backward()
    opt.step()
    if steps == 0:
        print("first step")
    steps.add_(1)
    return loss.detach()
"""


def batch(env):
    return (torch.randn(8, 4),)


def state(env):
    return {
        "weight": env.ns.model[0].weight,
        "running_mean": env.ns.model[1].running_mean,
        "steps": env.ns.steps,
    }


@backends(inductor=True)
def test_a_branch_on_data_after_the_step(backend):
    run_case(
        Case(
            "a_branch_on_data_after_the_step",
            prog(BRANCH_AFTER_THE_STEP),
            calls(4, batch),
            watch=state,
        ),
        backend,
    )


STEP_THEN_PRINT = """
import torch

torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)

def f(x):
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    print(f"loss {loss.item():.4f}")
    return loss.detach()
"""


@backends()
def test_a_step_with_nothing_to_decide_after_it_replays(backend):
    """Passes either way: a regression guard that the refusal stays narrow."""
    run_case(
        Case(
            "a_step_with_nothing_to_decide_after_it_replays",
            prog(STEP_THEN_PRINT),
            calls(5, batch),
            watch=lambda env: {"weight": env.ns.model.weight},
            min_hits=3,
        ),
        backend,
    )


LR_READ_BEFORE_THE_SCHEDULER = """
import torch

torch.manual_seed(0)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)

def f(x):
    lr = opt.param_groups[0]["lr"]
    sched.step()
    if x.sum() > 0:
        return x * lr, "up"
    return x * lr * 2, "down"
"""


def signs(*values):
    return [Call(lambda env, v=v: (torch.full((2,), v),)) for v in values]


@backends()
def test_a_learning_rate_read_before_the_scheduler_steps(backend):
    """F207: the run made again after a miss read the stepped learning rate."""
    run_case(
        Case(
            "a_learning_rate_read_before_the_scheduler_steps",
            prog(LR_READ_BEFORE_THE_SCHEDULER),
            signs(1.0, 1.0, -1.0, 1.0, -1.0, -1.0),
            watch=lambda env: {"lr": env.ns.opt.param_groups[0]["lr"]},
        ),
        backend,
    )


FLAGGED_THEN_STEPPED = """
import random

import torch

torch.manual_seed(0)
disc = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(disc.parameters(), lr=0.5)
log = []

def f(x):
    for p in disc.parameters():  # pix2pix / CycleGAN's set_requires_grad(net, True)
        p.requires_grad_(True)
    opt.zero_grad()
    loss = disc(x).sum()
    loss.backward()
    opt.step()
    n = 1 if random.random() < 0.5 else 2
    log.append(loss.item())
    return loss.detach(), n
"""


@backends()
def test_a_step_on_weights_a_callout_returned_then_a_branch(backend):
    # ``p.requires_grad_(True)`` returns ``p``: the forward read the weights as that
    # callout's result, so the step changing them in place went unnoticed and the run
    # made again after a miss at ``random.random()`` recomputed the loss from the
    # stepped weights (F220).
    run_case(
        Case(
            "step_on_weights_a_callout_returned",
            prog(FLAGGED_THEN_STEPPED),
            calls(6, lambda env: (torch.randn(2, 3),)),
            watch=lambda env: {"log": list(env.ns.log), "weight": env.ns.disc.weight},
        ),
        backend,
    )


FLAG_TAKEN_BACK = """
import random

import torch

disc = torch.nn.Linear(3, 1)
state = {"n": 0, "log": []}

def f(x):
    state["n"] += 1
    state["log"].append(state["n"])
    disc.weight.requires_grad = False
    y = disc(x)
    if random.random() < 0.5:
        y = y * 2
    disc.weight.requires_grad = True
    return y
"""


@backends()
def test_a_requires_grad_store_taken_back_on_a_miss(backend):
    # A replay that missed took its stores back, but restoring ``requires_grad`` tried
    # ``delattr`` (it is no instance attribute) and raised: the stores before it stayed,
    # and the run made again repeated them (F221).
    run_case(
        Case(
            "requires_grad_store_taken_back",
            prog(FLAG_TAKEN_BACK),
            calls(6, lambda env: (torch.randn(2, 3),)),
            watch=lambda env: {"n": env.ns.state["n"], "log": list(env.ns.state["log"])},
        ),
        backend,
    )


TRAIN_MODE_THEN_CLIP = """
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(8, 12), torch.nn.Dropout(0.2), torch.nn.Linear(12, 8)
)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)

def f(x):
    model.train()
    loss = torch.nn.functional.mse_loss(model(x), x)
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    opt.step()
    return loss.detach()
"""


@backends()
def test_a_step_that_starts_with_train_replays(backend):
    # Reading ``model.train`` to call it was taken for a read of the training state
    # ``train()`` changes, so every such step was refused (FG207) and ran eagerly.
    run_case(
        Case(
            "step_that_starts_with_train",
            prog(TRAIN_MODE_THEN_CLIP),
            [
                *calls(3, lambda env: (torch.randn(4, 8),)),
                execg("model.eval()"),
                *calls(3, lambda env: (torch.randn(4, 8),)),
            ],
            watch=lambda env: {
                "weights": [p.detach() for p in env.ns.model.parameters()],
                "training": [m.training for m in env.ns.model.modules()],
            },
            min_hits=2,
        ),
        backend,
    )
