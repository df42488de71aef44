"""Class 52: torch's global state around a replay, and modes entered inside the call.

What was wrong (the twelfth session's probe of settings and modes):

* a replay whose graph raised inside its ``torch.no_grad()`` / ``torch.autocast``
  region (an index out of range) left grad mode off, or autocast on, for everything
  the program ran afterwards (F224);
* the autocast dtype was guarded only while autocast was on: after
  ``torch.set_autocast_dtype("cpu", torch.float16)``, ``with torch.autocast("cpu"):``
  inside the function replayed the bfloat16 record (F225);
* ``with MyDispatchMode():`` inside the function: the graph records the ops above the
  mode, so a replay ran them without it (F226);
* ``torch.use_deterministic_algorithms(True)`` inside the function, replayed as a plain
  effect, did not reach the graph's ``torch.empty`` (F227);
* ``nn.MultiheadAttention`` / ``nn.TransformerEncoder`` in eval mode took their slow
  path under the monitor's torch-function mode, and the record replayed its numbers
  (padded positions not zero) (F228).
"""

from __future__ import annotations

import torch
from harness import Call, Case, backends, calls, execg, prog, run_case


def at(index):
    return Call(lambda env: (torch.randn(2, 4, requires_grad=True), torch.tensor([index])))


NO_GRAD_THEN_AN_INDEX = """
import torch

def f(x, index):
    with torch.no_grad():
        y = x * 2
        return y[index] + 1
"""


@backends()
def test_grad_mode_after_a_replay_that_raised(backend):
    run_case(
        Case(
            "grad_mode_after_a_replay_that_raised",
            prog(NO_GRAD_THEN_AN_INDEX),
            [at(0), at(1), at(7), at(1), at(0)],
            min_hits=2,
        ),
        backend,
    )


AUTOCAST_THEN_AN_INDEX = """
import torch

lin = torch.nn.Linear(4, 4)

def f(x, index):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = lin(x)
        return y[index].float()
"""


@backends()
def test_autocast_after_a_replay_that_raised(backend):
    run_case(
        Case(
            "autocast_after_a_replay_that_raised",
            prog(AUTOCAST_THEN_AN_INDEX),
            [at(0), at(1), at(7), at(1), at(0)],
            min_hits=2,
        ),
        backend,
    )


AUTOCAST_WITH_ITS_DEFAULT_DTYPE = """
import torch

lin = torch.nn.Linear(4, 4)

def f(x):
    with torch.autocast("cpu"):  # the dtype torch.set_autocast_dtype chose
        return lin(x)
"""


def rows(env):
    return (torch.randn(2, 4),)


@backends()
def test_autocast_with_its_default_dtype_changed_between_calls(backend):
    run_case(
        Case(
            "autocast_default_dtype_changed",
            prog(AUTOCAST_WITH_ITS_DEFAULT_DTYPE),
            [
                *calls(2, rows),
                execg("torch.set_autocast_dtype('cpu', torch.float16)"),
                *calls(2, rows),
                execg("torch.set_autocast_dtype('cpu', torch.bfloat16)"),
                *calls(2, rows),
            ],
            min_hits=3,
        ),
        backend,
    )


DISPATCH_MODE_INSIDE = """
import torch
from torch.utils._python_dispatch import TorchDispatchMode

seen = []

class AddOne(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        seen.append(str(func))
        out = func(*args, **(kwargs or {}))
        return out + 1 if func is torch.ops.aten.mul.Tensor else out

def f(x):
    with AddOne():
        y = x * 2
    return y - 1
"""


@backends()
def test_a_dispatch_mode_entered_inside_the_function(backend):
    run_case(
        Case(
            "dispatch_mode_inside",
            prog(DISPATCH_MODE_INSIDE),
            calls(3, rows),
            watch=lambda env: list(env.ns.seen),
        ),
        backend,
    )


DETERMINISTIC_INSIDE = """
import torch

def f(x):
    torch.use_deterministic_algorithms(True)
    y = torch.empty(3)  # deterministic mode fills it with NaN
    torch.use_deterministic_algorithms(False)
    return x + torch.nan_to_num(y, nan=7.0)
"""


@backends()
def test_deterministic_algorithms_switched_on_inside_the_function(backend):
    # Replayed as a plain effect after the graph, the switch did not reach its ``empty``:
    # the replays returned uninitialized memory (F227).
    run_case(
        Case(
            "deterministic_inside",
            prog(DETERMINISTIC_INSIDE),
            calls(3, lambda env: (torch.zeros(3),)),
            min_hits=1,
        ),
        backend,
    )


TRANSFORMER_FAST_PATH = """
import torch

torch.manual_seed(0)
layer = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True)
encoder = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=True).eval()
attention = torch.nn.MultiheadAttention(8, 2, batch_first=True).eval()

@torch.no_grad()
def f(x, padding):
    h = encoder(x, src_key_padding_mask=padding)
    return attention(h, h, h, need_weights=False)[0] * 2
"""


def padded(env):
    padding = torch.tensor([[False, False, True, True], [False, False, False, True]])
    return (torch.randn(2, 4, 8), padding)


@backends()
def test_transformer_layers_take_eagers_fast_path(backend):
    # The monitor's torch-function mode made these layers take their slow path, whose
    # graph replayed other numbers (padded positions not zero, last bits elsewhere) (F228).
    run_case(
        Case(
            "transformer_fast_path",
            prog(TRANSFORMER_FAST_PATH),
            [*calls(3, padded), execg("encoder.train()"), *calls(2, padded)],
            min_hits=2,
        ),
        backend,
    )


TWO_ATTENTION_LAYERS = """
import torch

torch.manual_seed(0)
first = torch.nn.MultiheadAttention(4, 2, batch_first=True).eval()
second = torch.nn.MultiheadAttention(4, 2, batch_first=True).eval()

@torch.no_grad()
def f(layer, x):
    return layer(x, x, x, need_weights=False)[0]
"""


def with_layer(name):
    return Call(lambda env: (getattr(env.ns, name), torch.randn(2, 3, 4)))


@backends()
def test_fast_path_layers_passed_as_arguments(backend):
    # The callout calls the layer at its path: each argument's own layer.
    run_case(
        Case(
            "fast_path_layers_as_arguments",
            prog(TWO_ATTENTION_LAYERS),
            [with_layer(name) for name in ("first", "second") * 3],
            min_hits=4,
        ),
        backend,
    )
