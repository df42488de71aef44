"""Class 20: torch's walks of a module tree inside the compiled code.

``self.parameters()``, ``named_parameters()``, ``buffers()``, ``modules()``,
``children()`` run in torch's Python, unobserved.  Programs that sum a
penalty over every parameter, count layers, find their device with
``next(self.parameters())`` or run their children in order are called
while the tree changes between calls: a layer added or replaced, a
parameter or buffer registered (in the root or a submodule), one set to
``None`` and back, weights tied and untied (the deduplicating walk yields
one tensor fewer).  Each change must be seen; unchanged trees must replay.
"""

from __future__ import annotations

from functools import partial

import pytest
import torch
from harness import Case, backends, calls, execg, mat, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="walks20")


PENALTY = """
import torch

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = torch.nn.Linear(4, 4)
        self.dec = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.dec(torch.tanh(self.enc(x)))
        penalty = sum((p ** 2).sum() for p in self.parameters())
        count = sum(p.numel() for p in self.parameters())
        return y.sum() + 0.01 * penalty, count

net = Net()
"""


@backends()
def test_parameter_penalty_sees_layers_and_parameters_added(backend):
    run_case(
        Case(
            "parameter_penalty_sees_layers_and_parameters_added",
            prog(PENALTY, "net"),
            [
                *calls(3, mat),
                execg("net.head = torch.nn.Linear(4, 2)"),
                *calls(2, mat),
                execg("net.enc.register_parameter('scale', torch.nn.Parameter(torch.ones(3)))"),
                *calls(2, mat),
                execg("net.register_parameter('gain', None)"),
                *calls(2, mat),
                execg("net.gain = torch.nn.Parameter(torch.full((2,), 3.0))"),
                *calls(2, mat),
                execg("del net.head"),
                *calls(2, mat),
            ],
            min_hits=5,
        ),
        backend,
    )


@backends()
def test_tied_and_untied_weights_change_what_the_walk_yields(backend):
    run_case(
        Case(
            "tied_and_untied_weights_change_what_the_walk_yields",
            prog(PENALTY, "net"),
            [
                *calls(2, mat),
                execg("net.dec.weight = net.enc.weight"),
                *calls(2, mat),
                execg("net.dec.weight = torch.nn.Parameter(net.enc.weight.detach().clone())"),
                *calls(2, mat),
            ],
            min_hits=3,
        ),
        backend,
    )


DEVICE_AND_BUFFERS = """
import torch

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
        self.register_buffer("offset", torch.zeros(4))

    def forward(self, x):
        first = next(self.parameters())
        x = x.to(first.dtype) + sum(b.sum() for b in self.buffers())
        names = [name for name, _ in self.named_buffers()]
        return self.body(x), names, first.dtype

net = Net()
"""


@backends()
def test_first_parameter_and_buffers_follow_the_tree(backend):
    run_case(
        Case(
            "first_parameter_and_buffers_follow_the_tree",
            prog(DEVICE_AND_BUFFERS, "net"),
            [
                *calls(2, mat),
                # Appended after the first parameter: the first one is unchanged.
                execg("net.extra = torch.nn.Linear(4, 4)"),
                *calls(2, mat),
                execg("net.body[0].register_buffer('mask', torch.ones(4), persistent=False)"),
                *calls(2, mat),
                execg("net.offset = None"),
                *calls(2, mat),
                execg("net.double()"),
                *calls(2, lambda env: torch.randn(2, 4, dtype=torch.float64)),
            ],
            min_hits=4,
        ),
        backend,
    )


LAYERS = """
import torch

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(4, 4)
        self.b = torch.nn.Dropout(0.0)
        self.c = torch.nn.Linear(4, 4)

    def forward(self, x):
        for child in self.children():
            x = child(x)
        linears = sum(isinstance(m, torch.nn.Linear) for m in self.modules())
        named = [name for name, _ in self.named_modules(prefix="net")]
        own = [name for name, _ in self.named_parameters(recurse=False)]
        return x, linears, named, own

net = Net()
"""


@backends()
def test_children_and_modules_follow_replaced_and_added_layers(backend):
    run_case(
        Case(
            "children_and_modules_follow_replaced_and_added_layers",
            prog(LAYERS, "net"),
            [
                *calls(2, mat),
                execg("net.b = torch.nn.Linear(4, 4)"),
                *calls(2, mat),
                execg("net.c.add_module('inner', torch.nn.Identity())"),
                *calls(2, mat),
                execg("net.own = torch.nn.Parameter(torch.ones(1))"),
                *calls(2, mat),
                execg("net.shared = net.a"),
                *calls(2, mat),
            ],
            min_hits=4,
        ),
        backend,
    )


@pytest.mark.parametrize("early", [False, True])
def test_a_partly_consumed_walk_guards_only_what_it_read(early):
    """``next(self.parameters())`` reads the first module's members: a layer added at the
    end is no miss; a walk run to its end sees it."""
    import fullgraph.runtime as fr

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.first = torch.nn.Linear(4, 4)

        def forward(self, x):
            if early:
                return self.first(x) * next(self.parameters()).sum()
            return self.first(x) * sum(p.sum() for p in self.parameters())

    net = Net()
    compiled = fr.compile(net, backend="eager")
    x = torch.randn(2, 4)
    compiled(x)
    compiled(x)
    net.later = torch.nn.Linear(4, 4)
    assert torch.allclose(compiled(x), net(x))
    assert compiled.stats.monitor_runs == (1 if early else 2)


CLIPPED_STEP = """
import torch

model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)

def f(x, y):
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    opt.step()
    return loss.detach(), norm
"""


@backends()
def test_clipped_training_step_replays_with_a_fresh_walk(backend):
    """``clip_grad_norm_(model.parameters(), ...)`` is a replayed call; the walk it is
    handed is made again on each replay (``model.parameters()`` in the mock)."""
    run_case(
        Case(
            "clipped_training_step_replays_with_a_fresh_walk",
            prog(CLIPPED_STEP),
            [
                *calls(3, lambda env: (torch.randn(3, 4), torch.randn(3, 1))),
                execg("model[0].weight.requires_grad_(False)"),
                *calls(3, lambda env: (torch.randn(3, 4), torch.randn(3, 1))),
            ],
            watch=lambda env: {"model": dict(env.ns.model.state_dict())},
            min_hits=3,
        ),
        backend,
    )


CONTAINER_LAYERS = """
import copy
import torch

seq = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Sigmoid())
layer = torch.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, batch_first=True)
encoder = torch.nn.TransformerEncoder(layer, num_layers=1, enable_nested_tensor=False)

def f(x):
    return seq(x), encoder(x.unsqueeze(0))
"""


@backends()
def test_container_layers_run_the_children_they_hold_now(backend):
    # nn.Sequential and nn.TransformerEncoder are torch's Python, run unobserved: each
    # runs every child it holds, so a child appended, removed or swapped for another
    # kind with no setting of its own (Sigmoid -> Tanh) changes the result.
    run_case(
        Case(
            "container_layers_run_the_children_they_hold_now",
            prog(CONTAINER_LAYERS),
            [
                *calls(2, mat),
                execg("seq[1] = torch.nn.Tanh()"),
                *calls(2, mat),
                execg("seq.append(torch.nn.ReLU())"),
                *calls(2, mat),
                execg("del seq[0]"),
                *calls(2, mat),
                execg(
                    "encoder.layers.append(copy.deepcopy(encoder.layers[0])); "
                    "encoder.num_layers += 1"
                ),
                *calls(2, mat),
            ],
            min_hits=5,
        ),
        backend,
    )
