"""Class 24: ``model.train()`` and ``model.eval()`` inside the compiled function.

A training step that starts with ``model.train()`` (and an evaluation that
switches to ``eval()`` and back) is replayed with the call made again in
program order, and what the later code reads of the modules' ``training``
flags is the value the call set, not the one at entry: the steps are called
while the caller switches the model to eval mode between calls (a validation
pass), adds a layer to the tree, or overrides ``train`` in a child.  Dropout
must be on exactly when eager has it on, the flags left behind must be
eager's, and the unchanged steps must replay.
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Case, backends, calls, execg, mat, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="switch24")


TRAIN_STEP = """
import torch

model = torch.nn.Sequential(
    torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Dropout(0.5), torch.nn.Linear(8, 1)
)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

def step(x):
    model.train()
    optimizer.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    optimizer.step()
    return loss.detach()
"""


@backends()
def test_train_step_after_an_eval_pass_trains(backend):
    run_case(
        Case(
            "train_step_after_an_eval_pass_trains",
            prog(TRAIN_STEP, "step"),
            [
                *calls(3, mat),
                execg("model.eval()"),
                *calls(2, mat),
                execg("model.eval()"),
                *calls(2, mat),
            ],
            min_hits=4,
        ),
        backend,
    )


@backends()
def test_a_layer_added_to_the_tree_is_switched_too(backend):
    run_case(
        Case(
            "a_layer_added_to_the_tree_is_switched_too",
            prog(TRAIN_STEP, "step"),
            [
                *calls(2, mat),
                execg("model.append(torch.nn.Dropout(0.2)); model.eval()"),
                *calls(3, mat),
                execg("model[1] = torch.nn.Sequential(torch.nn.Dropout(0.1)); model.eval()"),
                *calls(2, mat),
            ],
            min_hits=3,
        ),
        backend,
    )


EVALUATE = """
import torch

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5))
        self.norm = torch.nn.BatchNorm1d(4)

    def forward(self, x):
        return self.norm(self.body(x))

net = Net()

def evaluate(x, mode):
    was_training = net.training
    net.eval()
    with torch.no_grad():
        out = net(x)
    net.train(mode)
    return out, was_training
"""


@backends()
def test_evaluate_switches_to_eval_and_leaves_the_mode_asked_for(backend):
    run_case(
        Case(
            "evaluate_switches_to_eval_and_leaves_the_mode_asked_for",
            prog(EVALUATE, "evaluate"),
            [
                *calls(3, lambda env: (torch.randn(3, 4), True)),
                *calls(3, lambda env: (torch.randn(3, 4), False)),
                execg("net.train()"),
                *calls(2, lambda env: (torch.randn(3, 4), False)),
                *calls(2, lambda env: (torch.randn(3, 4), True)),
            ],
            min_hits=4,
        ),
        backend,
    )


FROZEN_NORM = """
import torch

class FrozenNorm(torch.nn.BatchNorm1d):
    def train(self, mode=True):
        return super().train(False)  # its statistics stay frozen

model = torch.nn.Sequential(torch.nn.Linear(4, 4), FrozenNorm(4), torch.nn.Dropout(0.5))

def step(x):
    model.train()
    return model(x).sum()
"""


@backends()
def test_a_child_that_overrides_train_keeps_its_own_mode(backend):
    run_case(
        Case(
            "a_child_that_overrides_train_keeps_its_own_mode",
            prog(FROZEN_NORM, "step"),
            [*calls(2, mat), execg("model.eval()"), *calls(2, mat)],
            min_hits=0,
        ),
        backend,
    )


ALIASED_LAYER = """
import torch

model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.5), torch.nn.Linear(8, 1))
drop = model[1]  # the step reaches it by this name, not through the model

def step(x):
    model.train()
    return model[2](drop(model[0](x))).sum()
"""


@backends()
def test_a_layer_taken_out_of_the_tree_is_no_longer_switched(backend):
    run_case(
        Case(
            "a_layer_taken_out_of_the_tree_is_no_longer_switched",
            prog(ALIASED_LAYER, "step"),
            [
                *calls(3, mat),
                execg("model[1] = torch.nn.Identity(); drop.eval()"),
                *calls(3, mat),
            ],
            min_hits=3,
        ),
        backend,
    )


STEP_THEN_ZERO = """
import torch

model = torch.nn.Linear(3, 1)
optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 2, 0.5)

def step(x, schedule):
    loss = model(x).pow(2).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()  # after the step: the common order
    if schedule:
        scheduler.step()
    return loss.detach(), optimizer.param_groups[0]["lr"]
"""


def batch(schedule):
    return lambda env: (torch.randn(4, 3), schedule)


@backends()
def test_reads_after_an_optimizer_step_replay(backend):
    # optimizer.step() changes only optimizer.state: zero_grad() and the learning rate
    # read after it are ordinary reads (an lr set between calls is a miss); after a
    # scheduler step the learning rate is state the call changed (monitored each time)
    run_case(
        Case(
            "reads_after_an_optimizer_step_replay",
            prog(STEP_THEN_ZERO, "step"),
            [
                *calls(3, batch(False)),
                execg("optimizer.param_groups[0]['lr'] = 0.05"),
                *calls(3, batch(False)),
                *calls(2, batch(True)),
            ],
            min_hits=4,
        ),
        backend,
    )
