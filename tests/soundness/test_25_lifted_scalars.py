"""Class 25: lifted Python numbers as operands.

A number that varies between calls is lifted into the graph (one record for all
its values).  The replay must give what the op gives with a Python number:

- a reflected operator (``t * model(x)``, ``p - x``, ``s - x.sum()``): the
  result is the tensor, not the number on the left;
- type promotion: a Python number takes part only by kind (``int_tensor * 2.5``
  is float32, ``half_0d * 1.1`` float16, ``int32_0d + 3`` int32, a bool mask
  times an ``.item()`` float float32), and a lifted float is not rounded to the
  tensor's dtype before the op (``half * 1.1`` is computed with the double);
- the Scalar overloads (``x ** 2.0`` squares, ``2 ** x`` is ``pow(Scalar,
  Tensor)``), bit for bit on the eager backend.

Every script varies the number, so it is lifted after the second call and the
later calls replay (``min_hits``).
"""

from __future__ import annotations

import pytest
import torch
from harness import Call, Case, Env, backends, program_env, run_case

FLOATS = [0.5, 1.25, 1.1, 3.3, 7.7, 0.3]
INTS = [2, 3, 5, 7, 4, 9]
OPERATORS = ["+", "-", "*", "/", "**", "//", "%"]
OPERATOR_IDS = ["add", "sub", "mul", "div", "pow", "floordiv", "mod"]

REFLECTED_MODULE = """
import torch

class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x, t):
        return t {op} self.lin(x)   # the number on the left: Tensor.__r<op>__

def build():
    torch.manual_seed(0)
    return Scaled()
"""

REFLECTED_ARGUMENT = """
def reflected(x, p):
    return p {op} x
"""


def script(args, values, label="v"):
    """A call per value: ``args(v)`` builds the arguments (fresh tensors each call)."""
    return [Call(lambda env, v=v: args(v), label=f"{label}={v!r}") for v in values]


def lifted_case(name, fn, args, values, min_hits=None):
    """Monitored twice (the number is lifted after the second call), then every call replays."""
    hits = len(values) - 2 if min_hits is None else min_hits
    return Case(name, lambda: Env(target=fn), script(args, values), min_hits=hits)


def positive(v):
    return (torch.rand(3) + 0.5, v)


# -- reflected operators -------------------------------------------------------


@pytest.mark.parametrize("number", [FLOATS, INTS], ids=["float", "int"])
@pytest.mark.parametrize("op", OPERATORS, ids=OPERATOR_IDS)
@backends()
def test_number_on_the_left_of_a_module_output(backend, op, number):
    def build():
        env = program_env(REFLECTED_MODULE.format(op=op), "build", "reflected_module")
        env.target = env.ns.build()
        env.model = env.target
        return env

    case = Case(
        f"number_{op}_module_output",
        build,
        script(lambda v: (torch.ones(3), v), number, "t"),
        min_hits=3,
    )
    run_case(case, backend)


@pytest.mark.parametrize("number", [FLOATS, INTS], ids=["float", "int"])
@pytest.mark.parametrize("op", OPERATORS, ids=OPERATOR_IDS)
@backends()
def test_number_on_the_left_of_an_argument(backend, op, number):
    def build():
        return program_env(REFLECTED_ARGUMENT.format(op=op), "reflected", "reflected_arg")

    case = Case(f"number_{op}_argument", build, script(positive, number, "p"), min_hits=3)
    run_case(case, backend)


def minus_sum(x, s):
    return s - x.sum(), s * x.mean() + 1


@backends(inductor=True)
def test_number_minus_a_reduction(backend):
    run_case(lifted_case("number_minus_a_reduction", minus_sum, positive, FLOATS), backend)


def reflected_compare(x, s):
    return s < x, s == x, s >= x.sum()


@backends()
def test_number_compared_with_a_tensor(backend):
    values = [0.5, 1.0, 0.75, 1.25, 0.9]
    run_case(
        lifted_case("number_compared_with_a_tensor", reflected_compare, positive, values), backend
    )


# -- type promotion ---------------------------------------------------------------


def scale(x, s):
    return x * s, s * x


def mixed(x, s):
    return x + s, s - x, x / s, x * s


def mixed_bool(x, s):  # a bool tensor has no subtraction
    return x + s, s + x, x / s, x * s


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8, torch.bool], ids=str)
@backends()
def test_integer_tensor_times_a_lifted_float(backend, dtype):
    def args(v):
        return (torch.arange(4).to(dtype), v)

    fn = mixed_bool if dtype is torch.bool else mixed
    values = [2.0, 2.5, 3.5, 0.5, 1.1]
    run_case(lifted_case(f"{dtype}_times_lifted_float", fn, args, values), backend)


@backends(inductor=True)
def test_int64_tensor_times_a_lifted_float(backend):
    run_case(
        lifted_case(
            "int64_tensor_times_lifted_float", scale, lambda v: (torch.arange(4), v), FLOATS
        ),
        backend,
    )


def first_plus(x, n):
    return x[0] + n, n * x[1], x[0] - n


@pytest.mark.parametrize("dtype", [torch.int32, torch.int16, torch.uint8, torch.int8], ids=str)
@backends()
def test_zero_dim_int_tensor_plus_a_lifted_int(backend, dtype):
    values = [1, 2, 3, 4, 200, -3]

    def args(n):
        return (torch.arange(3).to(dtype), n)

    run_case(lifted_case(f"zero_dim_{dtype}_plus_lifted_int", first_plus, args, values), backend)


def first_times(x, s):
    return x[0] * s, s + x[1], x[0] / s, x * s


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=str)
@backends()
def test_zero_dim_float_tensor_times_a_lifted_float(backend, dtype):
    def args(s):
        return (torch.linspace(0.3, 9.7, 7, dtype=torch.float64).to(dtype), s)

    values = [1.5, 2.5, 1.1, 3.3, 7.7, 1 / 3, 1e-3]
    run_case(
        lifted_case(f"zero_dim_{dtype}_times_lifted_float", first_times, args, values), backend
    )


@backends(inductor=True)
def test_zero_dim_half_times_a_lifted_float(backend):
    def args(s):
        return (torch.linspace(0.3, 9.7, 7, dtype=torch.float64).half(), s)

    run_case(
        lifted_case("zero_dim_half_times_lifted_float", first_times, args, [1.5, 2.5, 1.1, 3.3]),
        backend,
    )


def zero_dim_int_times_float(x, s):
    return x[0] * s, x[1] + s


@backends()
def test_zero_dim_int32_times_a_lifted_float(backend):
    def args(s):
        return (torch.arange(3, dtype=torch.int32), s)

    run_case(
        lifted_case("zero_dim_int32_times_lifted_float", zero_dim_int_times_float, args, FLOATS),
        backend,
    )


def mask_times_item(mask, t):
    return mask * t.item(), mask.int() + t.item(), t.item() * mask.long()


@backends()
def test_bool_mask_times_an_item_float(backend):
    def args(v):
        return (torch.tensor([True, False, True]), torch.tensor(v))

    run_case(
        lifted_case("bool_mask_times_item_float", mask_times_item, args, [0.1, 0.2, 0.3, 1 / 3]),
        backend,
    )


def powers(x, s):
    return x**s, s**x, x.abs() ** s


@backends()
def test_powers_with_a_lifted_exponent_or_base(backend):
    def args(v):
        return (torch.linspace(-2, 3, 50), v)

    run_case(
        lifted_case("powers_with_lifted_number", powers, args, [2.0, 3.0, 0.5, -1.0, 2.5, -2.0]),
        backend,
    )


def compare_and_update(x, s):
    above = x > s
    y = x.clone()
    y *= s
    z = x[3].clone()
    z *= s  # a 0-d tensor updated in place: computed as eager does, in its own dtype
    return above, y, z


@pytest.mark.parametrize("dtype", [torch.float16, torch.int32, torch.float32], ids=str)
@backends()
def test_comparison_and_in_place_with_a_lifted_number(backend, dtype):
    def args(v):
        return (torch.arange(5).to(dtype), v)

    # 3 * 5.199218925159557 is 15.59375 in float16 (the product rounded to float32
    # first), 15.6015625 when computed in float64 and rounded once.
    values = [1, 2, 3, 4] if not dtype.is_floating_point else [1.1, 2.5, 5.199218925159557, 0.7]
    run_case(lifted_case(f"compare_in_place_{dtype}", compare_and_update, args, values), backend)


def where_and_clamp(x, s):
    return torch.where(x > 1, x, s), x.clamp(min=s), torch.clamp(x[0], max=s), x * s


@backends()
def test_where_and_clamp_with_a_changing_number(backend):
    def args(v):
        return (torch.arange(4, dtype=torch.float16), v)

    case = lifted_case("where_clamp_changing_number", where_and_clamp, args, FLOATS, min_hits=0)
    run_case(case, backend)


def two_tensors(x, y, s):
    return x * s + y, (x[0] + s) * y, s * x[0] * y[0]


@backends()
def test_a_lifted_number_among_several_tensors(backend):
    def args(v):
        return (torch.arange(3, dtype=torch.int32), torch.ones(3, dtype=torch.float16), v)

    run_case(
        lifted_case("lifted_number_among_tensors", two_tensors, args, [1.1, 2.5, 3.3, 0.7]),
        backend,
    )


def precise(x, s):
    return x * s, s / x


@backends()
def test_lifted_float_keeps_double_precision_with_float64(backend):
    def args(v):
        return (torch.ones(3, dtype=torch.float64) * 3, v)

    values = [0.1, 0.2, 1 / 3, 16777217.0, 2.0**60 + 2.0**8]
    run_case(lifted_case("lifted_float_double_precision", precise, args, values), backend)
