"""Class 4: global state and hidden reads that change results.

Autocast outside the call and as a context inside it;
``torch.use_deterministic_algorithms``; the default dtype; tensor properties
the program reads (``is_contiguous()``, ``stride()``, ``is_leaf``,
``storage_offset()``, ``is_inference()``); ``os.environ``.
"""

from __future__ import annotations

import os

import torch
from harness import Call, Case, Do, Env, backends, calls, load_program, run_case


def mat(env):
    return torch.randn(4, 4)


def build_matmul():
    torch.manual_seed(0)
    w = torch.randn(4, 4)

    def project(x):
        return (x @ w).relu()

    return Env(target=project)


def autocast_ctx(env):
    return torch.autocast("cpu", dtype=torch.bfloat16)


@backends(
    inductor=True,
)
def test_autocast_context_around_call(backend):
    run_case(
        Case(
            "autocast_context_around_call",
            build_matmul,
            [
                *calls(2, mat),
                Call(mat, context=autocast_ctx, label="under autocast(bf16)"),
                Call(mat, context=autocast_ctx),
                Call(mat, label="autocast off again"),
            ],
        ),
        backend,
    )


def enable_autocast(dtype):
    def action(env):
        torch.set_autocast_enabled("cpu", True)
        torch.set_autocast_dtype("cpu", dtype)

    action.__name__ = f"set_autocast_enabled(cpu, {dtype})"
    return action


@backends()
def test_autocast_dtype_changed_between_calls(backend):
    run_case(
        Case(
            "autocast_dtype_changed_between_calls",
            build_matmul,
            [
                Do(enable_autocast(torch.bfloat16)),
                *calls(2, mat),
                Do(enable_autocast(torch.float16)),
                *calls(2, mat),
            ],
        ),
        backend,
    )


AUTOCAST_INSIDE = """
import torch

class MixedHead(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            h = self.proj(x)
        return h.float().softmax(-1), h.dtype
"""


def build_autocast_inside():
    torch.manual_seed(0)
    ns = load_program(AUTOCAST_INSIDE, "autocast_inside")
    return Env(ns=ns, target=ns.MixedHead())


@backends(
    inductor=True,
)
def test_autocast_context_inside(backend):
    run_case(
        Case("autocast_context_inside", build_autocast_inside, calls(4, mat), min_hits=3), backend
    )


DETERMINISTIC = """
import torch

def scatter_counts(index, src):
    out = torch.zeros(8)
    if torch.are_deterministic_algorithms_enabled():
        out = out.index_add(0, index, src)
    else:
        out.index_put_((index,), src, accumulate=True)
        out = out * 1.0
    return out, torch.are_deterministic_algorithms_enabled()
"""


def build_deterministic():
    ns = load_program(DETERMINISTIC, "deterministic")
    return Env(ns=ns, target=ns.scatter_counts)


def idx(env):
    return torch.randint(0, 8, (6,)), torch.randn(6)


@backends()
def test_deterministic_algorithms_toggled(backend):
    run_case(
        Case(
            "deterministic_algorithms_toggled",
            build_deterministic,
            [
                *calls(2, idx),
                Do(lambda env: torch.use_deterministic_algorithms(True), "deterministic on"),
                *calls(2, idx),
                Do(lambda env: torch.use_deterministic_algorithms(False), "off"),
                Call(idx),
            ],
        ),
        backend,
    )


def build_default_dtype():
    def bias_like(x):
        return x + torch.ones(x.shape[-1]) / 3

    return Env(target=bias_like)


@backends()
def test_default_dtype_changed(backend):
    run_case(
        Case(
            "default_dtype_changed",
            build_default_dtype,
            [
                *calls(2, lambda env: torch.randn(2, 3, dtype=torch.float64)),
                Do(lambda env: torch.set_default_dtype(torch.float64), "default dtype float64"),
                *calls(2, lambda env: torch.randn(2, 3, dtype=torch.float64)),
            ],
        ),
        backend,
    )


def build_contiguous():
    def flatten(x):
        if x.is_contiguous():
            return x.view(-1)
        return x.t().reshape(-1)

    return Env(target=flatten)


@backends(
    inductor=True,
)
def test_reads_is_contiguous(backend):
    run_case(
        Case(
            "reads_is_contiguous",
            build_contiguous,
            [
                *calls(2, mat),
                Call(lambda env: torch.randn(4, 4).t(), label="transposed (same shape)"),
                Call(mat),
            ],
        ),
        backend,
    )


def build_stride():
    def row_major_sum(x):
        return x.sum(dim=0 if x.stride(0) > x.stride(1) else 1), x.stride()

    return Env(target=row_major_sum)


@backends()
def test_reads_stride(backend):
    run_case(
        Case(
            "reads_stride",
            build_stride,
            [
                *calls(2, lambda env: torch.randn(3, 3)),
                Call(lambda env: torch.randn(3, 3).t(), label="transposed"),
            ],
        ),
        backend,
    )


def build_offset():
    def window(x):
        return x[:2] * (1 + x.storage_offset())

    return Env(target=window)


@backends()
def test_reads_storage_offset(backend):
    run_case(
        Case(
            "reads_storage_offset",
            build_offset,
            [
                *calls(2, lambda env: torch.randn(4)),
                Call(lambda env: torch.randn(6)[2:], label="offset 2"),
            ],
        ),
        backend,
    )


def build_inference():
    def maybe_clone(x):
        if x.is_inference():
            return x.clone() * 0
        return x * 2

    return Env(target=maybe_clone)


def inference_tensor(env):
    with torch.inference_mode():
        return torch.randn(3)


@backends()
def test_reads_is_inference(backend):
    run_case(
        Case(
            "reads_is_inference",
            build_inference,
            [
                *calls(2, lambda env: torch.randn(3)),
                Call(inference_tensor, label="inference tensor"),
            ],
        ),
        backend,
    )


def build_is_leaf():
    def describe(x):
        y = x * 2
        return y, x.is_leaf

    return Env(target=describe)


def non_leaf(env):
    return torch.randn(3, requires_grad=True) * 1.0


@backends()
def test_reads_is_leaf(backend):
    run_case(
        Case(
            "reads_is_leaf",
            build_is_leaf,
            [
                *calls(2, lambda env: torch.randn(3, requires_grad=True)),
                Call(non_leaf, label="non-leaf"),
                Call(non_leaf),
            ],
        ),
        backend,
    )


ENVIRON = """
import os
import torch

def activation(x):
    if os.environ.get("SOUNDNESS_FAST_GELU") == "1":
        return torch.nn.functional.gelu(x, approximate="tanh")
    return torch.nn.functional.gelu(x)
"""


def build_environ():
    ns = load_program(ENVIRON, "environ")
    return Env(ns=ns, target=ns.activation)


def set_env(value):
    def action(env):
        if value is None:
            os.environ.pop("SOUNDNESS_FAST_GELU", None)
        else:
            os.environ["SOUNDNESS_FAST_GELU"] = value

    action.__name__ = f"SOUNDNESS_FAST_GELU={value}"
    return action


@backends()
def test_reads_os_environ(backend):
    try:
        run_case(
            Case(
                "reads_os_environ",
                build_environ,
                [
                    Do(set_env(None)),
                    *calls(2, mat),
                    Do(set_env("1")),
                    *calls(2, mat),
                    Do(set_env(None)),
                    Call(mat),
                ],
            ),
            backend,
        )
    finally:
        os.environ.pop("SOUNDNESS_FAST_GELU", None)


def build_num_threads():
    def chunks(x):
        return x.chunk(max(1, min(torch.get_num_threads(), 2)))

    return Env(target=chunks)


@backends()
def test_reads_num_threads(backend):
    before = torch.get_num_threads()
    try:
        run_case(
            Case(
                "reads_num_threads",
                build_num_threads,
                [
                    Do(lambda env: torch.set_num_threads(2), "2 threads"),
                    *calls(2, mat),
                    Do(lambda env: torch.set_num_threads(1), "1 thread"),
                    *calls(2, mat),
                ],
            ),
            backend,
        )
    finally:
        torch.set_num_threads(before)
