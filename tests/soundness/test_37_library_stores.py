"""Class 37: module attributes that torch code sets while a module runs.

A torch layer's forward and library hooks run unobserved; only their torch
calls reach the monitor.  Old-style ``nn.utils.weight_norm`` and
``spectral_norm`` register a forward pre-hook that sets ``module.weight`` to
the tensor they compute: a replay computed it in the graph but never stored
it, so ``module.weight`` kept the first call's value.  Such stores are now
seen (the module's attributes are compared around the call) and replayed.
"""

from __future__ import annotations

import warnings
from functools import partial

import torch
from harness import Case, backends, calls, execg, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="library37")


def fresh(env):
    return (torch.randn(4, 3),)


WEIGHT_NORM = """
import warnings
import torch

warnings.simplefilter("ignore", FutureWarning)  # weight_norm is deprecated, not gone
lin = torch.nn.utils.weight_norm(torch.nn.Linear(3, 2))

def f(x):
    return lin(x) + 1
"""


@backends(inductor=True)
def test_old_weight_norm_sets_the_weight(backend):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        run_case(
            Case(
                "old_weight_norm_sets_the_weight",
                prog(WEIGHT_NORM),
                [
                    *calls(2, fresh),
                    execg("with torch.no_grad(): lin.weight_g.mul_(1.5)"),
                    *calls(2, fresh),
                    execg("with torch.no_grad(): lin.weight_v.add_(0.25)"),
                    *calls(2, fresh),
                ],
                min_hits=3,
            ),
            backend,
        )


SPECTRAL_NORM = """
import torch

lin = torch.nn.utils.spectral_norm(torch.nn.Linear(3, 3))

def f(x):
    return lin(x).relu()
"""


@backends()
def test_old_spectral_norm_sets_the_weight_and_updates_its_vectors(backend):
    run_case(
        Case(
            "old_spectral_norm_sets_the_weight_and_updates_its_vectors",
            prog(SPECTRAL_NORM),
            [
                *calls(3, fresh),
                execg("lin.eval()"),
                *calls(2, fresh),
                execg("lin.train()"),
                *calls(2, fresh),
            ],
            min_hits=3,
        ),
        backend,
    )


WEIGHT_NORM_ON_A_USER_MODULE = """
import warnings
import torch

warnings.simplefilter("ignore", FutureWarning)

class Scale(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(3, 3))

    def forward(self, x):
        return x @ self.weight.t()

layer = torch.nn.utils.weight_norm(Scale())

def f(x):
    return layer(x) * 2
"""


@backends()
def test_weight_norm_hook_on_a_user_module(backend):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        run_case(
            Case(
                "weight_norm_hook_on_a_user_module",
                prog(WEIGHT_NORM_ON_A_USER_MODULE),
                [
                    *calls(2, fresh),
                    execg("with torch.no_grad(): layer.weight_g.mul_(2.0)"),
                    *calls(3, fresh),
                ],
                min_hits=3,
            ),
            backend,
        )


LAZY_LAYER = """
import torch

lin = torch.nn.LazyLinear(2)

def f(x):
    return lin(x) - 1
"""


@backends()
def test_a_lazy_layer_initialised_by_the_first_call(backend):
    run_case(
        Case("a_lazy_layer_initialised_by_the_first_call", prog(LAZY_LAYER), calls(4, fresh)),
        backend,
    )
