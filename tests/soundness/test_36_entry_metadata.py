"""Class 36: tensor metadata the call itself changes, and torch state read through getters.

A guard compares a tensor's metadata (shape, strides, requires_grad, whether it
is a view) with what the monitoring run saw.  It took that from the tensor as
it was after the call, so a function that changes its argument's metadata
(``x.requires_grad_(True)``, ``x.squeeze_()``, ``x.detach_()``,
``lin.weight.requires_grad_(False)``) recorded a guard that accepted the
inputs the first call did not have and rejected the ones it had: the wrong
branch replayed.  The metadata is now taken when the run first reads the
tensor.  Also here: global torch state read through getters
(``torch.get_float32_matmul_precision()``, the default device) is guarded,
not baked into the record, and ``x._base is None`` (is the argument a view?)
is a read the guard checks.
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Case, backends, calls, execg, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="entry36")


def fresh(env):
    return (torch.randn(4, 3),)


def needs_grad(env):
    return (torch.randn(4, 3, requires_grad=True),)


REQUIRES_GRAD_SET = """
import torch

def f(x):
    if x.requires_grad:
        tag = 1.0
    else:
        tag = 2.0
    x.requires_grad_(True)
    return x * tag
"""


@backends()
def test_requires_grad_set_by_the_call(backend):
    run_case(
        Case(
            "requires_grad_set_by_the_call",
            prog(REQUIRES_GRAD_SET),
            [*calls(3, fresh), *calls(2, needs_grad), *calls(2, fresh)],
            min_hits=3,
        ),
        backend,
    )


SQUEEZE_IN_PLACE = """
import torch

def f(x):
    if x.dim() == 3:
        x.squeeze_(0)
        return x * 2
    return x + 1
"""


@backends(inductor=True)
def test_squeeze_in_place_of_an_argument(backend):
    """The record is refused (a graph compiled for the squeezed shape would get the
    unsqueezed input): each call runs as the program, right."""
    run_case(
        Case(
            "squeeze_in_place_of_an_argument",
            prog(SQUEEZE_IN_PLACE),
            [
                *calls(3, lambda env: (torch.randn(1, 4, 3),)),
                *calls(2, lambda env: (torch.randn(4, 3),)),
                *calls(2, lambda env: (torch.randn(1, 4, 3),)),
            ],
        ),
        backend,
    )


DETACH_IN_PLACE = """
import torch

def f(x):
    if x.requires_grad:
        x.detach_()
        return x + 1
    return x - 1
"""


@backends()
def test_detach_in_place_of_an_argument(backend):
    run_case(
        Case(
            "detach_in_place_of_an_argument",
            prog(DETACH_IN_PLACE),
            [*calls(3, needs_grad), *calls(2, fresh), *calls(2, needs_grad)],
            min_hits=3,
        ),
        backend,
    )


FREEZE_A_WEIGHT = """
import torch

lin = torch.nn.Linear(3, 2)

def f(x):
    frozen = not lin.weight.requires_grad
    lin.weight.requires_grad_(False)
    out = lin(x)
    return out * 2 if frozen else out
"""


@backends()
def test_a_weight_frozen_by_the_call(backend):
    run_case(
        Case(
            "a_weight_frozen_by_the_call",
            prog(FREEZE_A_WEIGHT),
            [
                *calls(3, fresh),
                execg("lin.weight.requires_grad_(True)"),
                *calls(3, fresh),
            ],
            min_hits=3,
        ),
        backend,
    )


IS_A_VIEW = """
import torch

def f(x):
    if x._base is None:
        return x * 2
    return x + 1
"""


@backends()
def test_whether_an_argument_is_a_view(backend):
    def view(env):
        return (torch.randn(8, 3)[:4],)

    run_case(
        Case(
            "whether_an_argument_is_a_view",
            prog(IS_A_VIEW),
            [*calls(3, fresh), *calls(2, view), *calls(2, fresh)],
            min_hits=3,
        ),
        backend,
    )


MATMUL_PRECISION = """
import torch

def f(x):
    if torch.get_float32_matmul_precision() == "highest":
        return x * 2
    return x + 1
"""


@backends()
def test_matmul_precision_read_through_its_getter(backend):
    run_case(
        Case(
            "matmul_precision_read_through_its_getter",
            prog(MATMUL_PRECISION),
            [
                *calls(3, fresh),
                execg("torch.set_float32_matmul_precision('high')"),
                *calls(2, fresh),
                execg("torch.set_float32_matmul_precision('highest')"),
                *calls(2, fresh),
            ],
            min_hits=3,
        ),
        backend,
    )


DETERMINISTIC_WARN_ONLY = """
import torch

def f(x):
    if torch.is_deterministic_algorithms_warn_only_enabled():
        return x * 2
    return x + 1
"""


@backends()
def test_deterministic_warn_only_read_through_its_getter(backend):
    run_case(
        Case(
            "deterministic_warn_only_read_through_its_getter",
            prog(DETERMINISTIC_WARN_ONLY),
            [
                execg("torch.use_deterministic_algorithms(True)"),
                *calls(3, fresh),
                execg("torch.use_deterministic_algorithms(True, warn_only=True)"),
                *calls(2, fresh),
                execg("torch.use_deterministic_algorithms(True)"),
                *calls(2, fresh),
                execg("torch.use_deterministic_algorithms(False)"),
            ],
            min_hits=3,
        ),
        backend,
    )


DEFAULT_DEVICE = """
import torch

def f(x):
    made = torch.zeros(2, 3) + 1
    return x * 2, str(made.device), made.shape
"""


def under_meta(env):
    return torch.device("meta")


@backends(inductor=True)
def test_tensor_factories_follow_the_default_device(backend):
    run_case(
        Case(
            "tensor_factories_follow_the_default_device",
            prog(DEFAULT_DEVICE),
            [
                *calls(3, fresh),
                *calls(3, fresh, context=under_meta, label="under torch.device('meta')"),
                *calls(2, fresh),
            ],
            min_hits=4,
        ),
        backend,
    )


UNDER_A_USER_MODE = """
import torch
from torch.overrides import TorchFunctionMode

class DoubleAdds(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        return out * 2 if func is torch.Tensor.add else out

def f(x):
    return x + 1
"""


@backends(inductor=True)
def test_a_call_under_a_torch_function_mode_runs_eagerly(backend):
    run_case(
        Case(
            "a_call_under_a_torch_function_mode_runs_eagerly",
            prog(UNDER_A_USER_MODE),
            [
                *calls(3, fresh),
                *calls(2, fresh, context=lambda env: env.ns.DoubleAdds(), label="under a mode"),
                *calls(2, fresh),
            ],
            min_hits=3,
        ),
        backend,
    )


CALLOUT_RESULT_SQUEEZED = """
import torch

def f(x):
    idx = (x > 0).nonzero()
    n = idx.shape[0]
    idx.squeeze_(1)
    return x[idx] * n
"""


@backends(inductor=True)
def test_a_callout_result_changed_in_place_later(backend):
    """``idx.squeeze_(1)`` on nonzero's result, a graph input: refused, as above."""

    def vector(env):
        return (torch.randn(6),)

    run_case(
        Case(
            "a_callout_result_changed_in_place_later",
            prog(CALLOUT_RESULT_SQUEEZED),
            calls(6, vector),
        ),
        backend,
    )
