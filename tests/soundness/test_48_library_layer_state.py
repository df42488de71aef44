"""Class 48: state of torch's own layers that their forward reads unobserved.

A torch layer's ``forward`` runs in torch's code; the guard checks, on its behalf,
what that code reads (``monitor/library_layers.py``).  What was missed:

* a parameter or buffer slot holding None (``lin.bias = None``): the record made
  without the bias kept replaying after a bias was set again (F190);
* a setting held in a list (``AdaptiveAvgPool2d([2, 2])``, ``Upsample(size=[..])``),
  replaced or changed in place, or in a ``torch.Size`` (``nn.Unflatten``): not
  guarded, so the output kept the first call's shape (F191);
* a function-valued setting (``TransformerEncoderLayer.activation = F.tanh``): the
  record kept the first activation (F192);
* a weight shared by two layers (an LM head tied to its embedding): the guard read
  it through the first layer only, so untying it replayed the old weight (F193).
"""

from __future__ import annotations

import torch
from harness import Case, backends, calls, execg, prog, run_case


def rows(env):
    return (torch.randn(2, 4),)


BIAS_REMOVED_AND_SET_AGAIN = """
import torch

lin = torch.nn.Linear(4, 2)
"""


@backends(inductor=True)
def test_bias_removed_then_set_again(backend):
    run_case(
        Case(
            "bias_removed_then_set_again",
            prog(BIAS_REMOVED_AND_SET_AGAIN, target="lin"),
            [
                *calls(2, rows),
                execg("lin.bias = None"),
                *calls(2, rows),
                execg("lin.bias = torch.nn.Parameter(torch.full((2,), 100.0))"),
                *calls(2, rows),
            ],
            min_hits=3,
        ),
        backend,
    )


BUFFER_NONE_THEN_SET = """
import torch

norm = torch.nn.BatchNorm1d(4, track_running_stats=False)
"""


@backends()
def test_running_stats_set_on_a_norm_without_them(backend):
    run_case(
        Case(
            "running_stats_set_on_a_norm_without_them",
            prog(BUFFER_NONE_THEN_SET, target="norm"),
            [
                *calls(2, rows),
                execg("norm.eval()"),
                *calls(2, rows),
                execg("norm.running_mean = torch.full((4,), 3.0)"),
                execg("norm.running_var = torch.full((4,), 2.0)"),
                *calls(2, rows),
            ],
            min_hits=2,
        ),
        backend,
    )


LIST_SETTING = """
import torch

pool = torch.nn.AdaptiveAvgPool2d([2, 2])
"""


def image(env):
    return (torch.randn(1, 1, 8, 8),)


@backends()
def test_a_list_setting_replaced_and_changed_in_place(backend):
    run_case(
        Case(
            "a_list_setting_replaced_and_changed_in_place",
            prog(LIST_SETTING, target="pool"),
            [
                *calls(2, image),
                execg("pool.output_size = [4, 4]"),
                *calls(2, image),
                execg("pool.output_size[0] = 1"),
                *calls(2, image),
            ],
            min_hits=3,
        ),
        backend,
    )


SIZE_SETTING = """
import torch

unflatten = torch.nn.Unflatten(1, torch.Size([2, 6]))
"""


@backends()
def test_a_torch_size_setting_replaced(backend):
    run_case(
        Case(
            "a_torch_size_setting_replaced",
            prog(SIZE_SETTING, target="unflatten"),
            [
                *calls(2, lambda env: (torch.randn(3, 12),)),
                execg("unflatten.unflattened_size = torch.Size([3, 4])"),
                *calls(2, lambda env: (torch.randn(3, 12),)),
            ],
            min_hits=2,
        ),
        backend,
    )


ACTIVATION_FUNCTION = """
import torch

layer = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
"""


@backends()
def test_an_activation_function_swapped(backend):
    run_case(
        Case(
            "an_activation_function_swapped",
            prog(ACTIVATION_FUNCTION, target="layer"),
            [
                *calls(2, lambda env: (torch.randn(2, 3, 8),)),
                execg("layer.activation = torch.nn.functional.tanh"),
                *calls(2, lambda env: (torch.randn(2, 3, 8),)),
            ],
            min_hits=2,
        ),
        backend,
    )


TIED_HEAD = """
import torch
from torch import nn

class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.head = nn.Linear(4, 10, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, ids):
        return self.head(self.emb(ids))

lm = LM()
"""


def ids(env):
    return (torch.randint(0, 10, (3,)),)


@backends(inductor=True)
def test_a_tied_head_untied(backend):
    run_case(
        Case(
            "a_tied_head_untied",
            prog(TIED_HEAD, target="lm"),
            [
                *calls(2, ids),
                execg("lm.head.weight = nn.Parameter(torch.zeros(10, 4))"),
                *calls(2, ids),
            ],
            min_hits=2,
        ),
        backend,
    )


SHARED_BETWEEN_TWO_LINEARS = """
import torch

shared = torch.nn.Linear(4, 4)
seq = torch.nn.Sequential(shared, torch.nn.ReLU(), torch.nn.Linear(4, 4))
seq[2].weight = shared.weight
"""


@backends()
def test_a_weight_shared_by_two_layers_untied(backend):
    run_case(
        Case(
            "a_weight_shared_by_two_layers_untied",
            prog(SHARED_BETWEEN_TWO_LINEARS, target="seq"),
            [
                *calls(2, rows),
                execg("seq[2].weight = torch.nn.Parameter(torch.zeros(4, 4))"),
                *calls(2, rows),
            ],
            min_hits=2,
        ),
        backend,
    )
