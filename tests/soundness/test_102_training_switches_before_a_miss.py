"""Class 102: ``model.eval()`` ... ``model.train()`` before a miss (found 2026-12-07).

F377 (evaluation-loop probe of the nineteenth session): ``model.eval()``, a forward
under ``no_grad``, ``model.train()``, then a branch on ``acc.item()`` (best-metric
tracking).  A replay that missed at the branch handed the monitoring run the
results of the calls it had made, ``model.eval()`` among them, so the rerun did not
switch to eval mode: its forward ran in train mode (dropout applied, the torch RNG
advanced; a BatchNorm's running statistics updated for good).  A training switch
the monitor follows is never handed over: the run after a miss makes it again where
the program does.
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Case, backends, calls, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="switch102")


def _batch(env):
    return (torch.randn(6, 4), torch.randint(0, 3, (6,)))


EVALUATE = """
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), LAYER, nn.Linear(8, 3))
best = {"acc": 0.0}

def f(x, y):
    model.eval()
    with torch.no_grad():
        logits = model(x)
    model.train()
    acc = (logits.argmax(1) == y).float().mean().item()
    if acc > best["acc"]:
        best["acc"] = acc
    return acc, logits
"""


@backends()
def test_an_evaluation_with_dropout_that_misses_after_it(backend):
    source = EVALUATE.replace("LAYER", "nn.Dropout(0.5)")
    watch = lambda env: (env.ns.best["acc"], env.ns.model.training)
    run_case(Case("dropout", prog(source), calls(8, _batch), min_hits=2, watch=watch), backend)


@backends()
def test_an_evaluation_with_batch_norm_that_misses_after_it(backend):
    source = EVALUATE.replace("LAYER", "nn.BatchNorm1d(8)")
    watch = lambda env: (
        env.ns.best["acc"],
        env.ns.model[1].running_mean.clone(),
        int(env.ns.model[1].num_batches_tracked),
    )
    run_case(Case("batch_norm", prog(source), calls(8, _batch), min_hits=2, watch=watch), backend)
