"""Class 75: what fullgraph reads after a miss must not run the program's code.

Found by the sixteenth session's probes (F310): after a miss, the compiled callable
asked what changed since the latest record by evaluating the record's paths as
Python on the new call's objects.  On a ``defaultdict`` argument that ran
``__missing__`` and inserted the key the path names (the call then took the other
path, or raised); a parametrization registered between calls ran once more than
eager runs it (a random one drew numbers, a counter counted, spectral_norm did
another power iteration).  Those paths are read without running code now.
"""

from __future__ import annotations

import collections
from functools import partial

import torch
from harness import Call, Case, calls, execg, mat, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="miss75")

OPTIONAL_LABELS = """
import torch

def f(batch):
    y = batch["x"] * 2
    if "labels" in batch:
        y = y - batch["labels"]
    return y, len(batch)
"""


def _batch(labels: bool):
    def build(env):
        batch = collections.defaultdict(lambda: None, x=torch.randn(3))
        if labels:
            batch["labels"] = torch.randn(3)
        env.batch = batch
        return (batch,)

    return build


def test_a_defaultdict_argument_without_a_key_the_record_read():
    script = [Call(_batch(True)), Call(_batch(True))]
    script += [Call(_batch(False)), Call(_batch(False))]
    watch = lambda env: sorted(getattr(env, "batch", {}))
    run_case(Case("defaultdict_batch", prog(OPTIONAL_LABELS), script, watch=watch), "eager")


NEW_PARAMETRIZATION = """
import torch
import torch.nn.utils.parametrize as P

torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh(), torch.nn.Linear(4, 4))

class Noisy(torch.nn.Module):
    calls = 0

    def forward(self, w):
        Noisy.calls += 1
        return w + 0.01 * torch.randn_like(w)

def f(x):
    return net(x)
"""


def test_a_parametrization_registered_between_calls():
    register = execg("P.register_parametrization(net[2], 'weight', Noisy())")
    script = [*calls(3, mat), register, *calls(3, mat)]
    watch = lambda env: env.ns.Noisy.calls
    run_case(Case("new_parametrization", prog(NEW_PARAMETRIZATION), script, watch=watch), "eager")
