"""Class 8: numbers.

A lifted Python float keeps Python's float64 semantics (a lifted scalar times
a float64 tensor; magnitudes and integers float32 cannot represent); ints
beyond 32 bits; bools; Python arithmetic on numbers that change each call.
"""

from __future__ import annotations

import math

import torch
from harness import Call, Case, Env, backends, calls, program_env, run_case


def build_scale():
    def scale(x, s):
        return x * s

    return Env(target=scale)


def f64(values):
    return [
        Call(lambda env, v=v: (torch.ones(3, dtype=torch.float64), v), label=f"s={v!r}")
        for v in values
    ]


@backends(
    inductor=True,
)
def test_lifted_float_times_float64_tensor(backend):
    run_case(
        Case(
            "lifted_float_times_float64_tensor",
            build_scale,
            f64([0.1, 0.2, 1 / 3, math.pi, 1e-300]),
        ),
        backend,
    )


@backends()
def test_lifted_float_beyond_float32(backend):
    run_case(
        Case(
            "lifted_float_beyond_float32",
            build_scale,
            f64([1.0, 2.0, 16777217.0, 1e39, 2.0**60 + 2.0**8]),
        ),
        backend,
    )


def build_offset():
    def offset(x, n):
        return x + n, n * 2

    return Env(target=offset)


@backends()
def test_int_beyond_32_bits(backend):
    values = [1, 2, 2**31 + 5, 2**40 + 3, 2**62 + 1, -(2**35)]
    run_case(
        Case(
            "int_beyond_32_bits",
            build_offset,
            [
                Call(lambda env, v=v: (torch.zeros(2, dtype=torch.int64), v), label=f"n={v}")
                for v in values
            ],
        ),
        backend,
    )


@backends()
def test_lifted_int_into_float32_tensor(backend):
    values = [3, 5, 16777217, 2**53 + 1]
    run_case(
        Case(
            "lifted_int_into_float32_tensor",
            build_offset,
            [Call(lambda env, v=v: (torch.zeros(2), v), label=f"n={v}") for v in values],
        ),
        backend,
    )


def build_flag():
    def gate(x, enabled):
        y = x * enabled
        return y, enabled + 1, y.dtype

    return Env(target=gate)


@backends()
def test_bool_argument_arithmetic(backend):
    values = [True, True, False, True, False]
    run_case(
        Case(
            "bool_argument_arithmetic",
            build_flag,
            [Call(lambda env, v=v: (torch.arange(3), v), label=f"enabled={v}") for v in values],
        ),
        backend,
    )


def build_python_math():
    def stats(x, k):
        mean = float(x.mean())
        q = k // 3
        r = -k % 4
        return x * (mean / k), q, r, k / 3, round(mean * k, 2)

    return Env(target=stats)


@backends()
def test_python_arithmetic_on_changing_ints(backend):
    values = [3, 7, -7, 10, 2**33 + 1]
    run_case(
        Case(
            "python_arithmetic_on_changing_ints",
            build_python_math,
            [Call(lambda env, v=v: (torch.randn(4), v), label=f"k={v}") for v in values],
        ),
        backend,
    )


def build_item_float():
    def normalize(x):
        total = x.sum().item()
        return x / total, total * 0.1

    return Env(target=normalize)


@backends(
    inductor=True,
)
def test_item_float_arithmetic_float64(backend):
    run_case(
        Case(
            "item_float_arithmetic_float64",
            build_item_float,
            [Call(lambda env: torch.rand(5, dtype=torch.float64) + 0.5) for _ in range(4)],
        ),
        backend,
    )


def build_int_tensor():
    def bucket(x, width):
        return torch.div(x, width, rounding_mode="floor"), x % width

    return Env(target=bucket)


@backends()
def test_int_tensor_floor_div_by_changing_int(backend):
    values = [3, 4, 2**33, 7, -3]
    run_case(
        Case(
            "int_tensor_floor_div_by_changing_int",
            build_int_tensor,
            [
                Call(
                    lambda env, v=v: (torch.tensor([-(2**40), -7, 0, 7, 2**40]), v), label=f"w={v}"
                )
                for v in values
            ],
        ),
        backend,
    )


NUMPY_ON_SHAPES = """
import numpy as np

def flatten_scaled(x):
    n = np.prod(x.shape)          # numpy scalars baked into the graph as constants
    d = np.sqrt(x.shape[-1])
    return x.reshape(n) / d, n
"""


def test_numpy_on_shapes_replays():
    def rows(count):
        return lambda env: (torch.randn(count, 3),)

    run_case(
        Case(
            "numpy_on_shapes",
            lambda: program_env(NUMPY_ON_SHAPES, "flatten_scaled"),
            [*calls(3, rows(2)), *calls(3, rows(4))],
            min_hits=4,
        ),
        "eager",
    )
