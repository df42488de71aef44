"""Class 63: cached values, autograd modes inside the function, setting getters.

Found by the fifteenth session's probes of stateful model code, autograd and
torch's Python APIs (F274-F279):

- ``functools.cached_property``: the record made while the cache was empty was
  replayed when it was full (recomputing and overwriting a value the caller had
  changed in place).
- ``o = ids.tolist(); o[0] += 1; return o``: the mid-guard compared the callout's
  result after the program changed it, and the mock returned the unchanged list.
- ``checkpoint(fn, use_reentrant=False)`` of a function with effects (a counter, a
  print): eager makes them again when the backward recomputes it.
- ``saved_tensors_hooks`` and ``detect_anomaly`` entered inside the function: a
  replay's graph neither packs its saved tensors nor checks its backward.
- A custom ``Function`` returning ``(tensor, int)``: the monitored call's tensor had
  no ``grad_fn``.
- ``torch.backends.cuda.flash_sdp_enabled()``, ``torch.backends.mha
  .get_fastpath_enabled()``: switches read through getters were not guarded.
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Call, Case, Do, backends, calls, execg, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="cached63")


def fresh(env):
    return (torch.rand(1, 3),)


CACHED_PROPERTY = """
import functools
import torch

class Masked(torch.nn.Module):
    @functools.cached_property
    def mask(self):
        return torch.tril(torch.ones(3, 3))

    def forward(self, x):
        return x @ self.mask

model = Masked()
"""


@backends()
def test_a_cached_property_warm_and_cold(backend):
    scale = execg("model.mask.mul_(2)")
    forget = execg("del model.mask")
    script = [
        *calls(3, fresh),
        scale,
        *calls(2, fresh),
        forget,
        *calls(2, fresh),
        scale,
        Call(fresh),
    ]
    watch = lambda env: dict(env.ns.model.__dict__).get("mask")
    case = Case("cached_property", prog(CACHED_PROPERTY, "model"), script, min_hits=3, watch=watch)
    run_case(case, backend)


TOLIST = """
import torch

def f(ids):
    lengths = ids.tolist()
    lengths[0] += 1  # a BOS token
    return max(lengths), lengths
"""


@backends()
def test_a_list_from_tolist_changed_by_the_program(backend):
    script = [Call(lambda env, v=v: (torch.tensor(v),)) for v in ([1, 2], [2, 2], [1, 2], [3, 5])]
    run_case(Case("tolist_changed", prog(TOLIST), script), backend)


CHECKPOINTED = """
import torch
from torch.utils.checkpoint import checkpoint

w = torch.ones(3, 3, requires_grad=True)
count = {"n": 0}

def block(x):
    count["n"] += 1
    print("block", count["n"])
    return torch.tanh(x @ w)

def f(x):
    y = checkpoint(block, x, use_reentrant=False)
    y.sum().backward()
    return y.detach()
"""


@backends()
def test_a_checkpointed_function_with_effects(backend):
    run_case(Case("checkpoint_effects", prog(CHECKPOINTED), calls(4, fresh)), backend)


AUTOGRAD_MODES = """
import torch

w = torch.ones(3, requires_grad=True)
packed = {"n": 0}

def pack(t):
    packed["n"] += 1
    return t.to(torch.bfloat16)

def unpack(t):
    return t.float()

def hooks(x):
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = (w * x).sin()
    y.sum().backward()
    return y.detach()

def anomaly(x):
    with torch.autograd.detect_anomaly():
        y = (w * x).sqrt().sum()
        y.backward()
    return y.detach()
"""


@backends()
def test_saved_tensor_hooks_inside(backend):
    case = Case("saved_tensor_hooks", prog(AUTOGRAD_MODES, "hooks"), calls(3, fresh))
    run_case(case, backend)


@backends()
def test_anomaly_detection_inside(backend):
    script = [Call(lambda env: (torch.ones(3),)) for _ in range(3)]
    script.append(Call(lambda env: (torch.tensor([1.0, 0.0, -1.0]),)))
    run_case(Case("detect_anomaly", prog(AUTOGRAD_MODES, "anomaly"), script), backend)


MIXED_OUTPUTS = """
import torch

class Scaled(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, n):
        ctx.n = n
        return a * 2, n * 2

    @staticmethod
    def backward(ctx, grad, grad_n):
        return grad * 10 * ctx.n, None

w = torch.ones(3, requires_grad=True)

def f(x):
    y, k = Scaled.apply(w * x, 1)
    (y * k).sum().backward()
    return y, k
"""


@backends()
def test_a_custom_function_returning_a_number_too(backend):
    run_case(Case("mixed_outputs", prog(MIXED_OUTPUTS), calls(3, fresh)), backend)


GETTERS = """
import torch

def f(x):
    flash = torch.backends.cuda.flash_sdp_enabled()
    fast = torch.backends.mha.get_fastpath_enabled()
    return x * (2 if flash else 3) + (1 if fast else 0)
"""


def switch(flash, fast):
    def action(env):
        torch.backends.cuda.enable_flash_sdp(flash)
        torch.backends.mha.set_fastpath_enabled(fast)

    return Do(action, f"flash sdp {flash}, fast path {fast}")


@backends()
def test_switches_read_through_getters(backend):
    flash, fast = torch.backends.cuda.flash_sdp_enabled(), torch.backends.mha.get_fastpath_enabled()
    script = [
        *calls(2, fresh),
        switch(False, False),
        *calls(2, fresh),
        switch(True, True),
        Call(fresh),
    ]
    try:
        run_case(Case("setting_getters", prog(GETTERS), script, min_hits=2), backend)
    finally:
        torch.backends.cuda.enable_flash_sdp(flash)
        torch.backends.mha.set_fastpath_enabled(fast)
