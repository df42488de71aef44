"""Class 49: numbers the program computes in Python from sizes, strides and arguments.

What was wrong:

* A bitwise operator on a size (``half = x.shape[-1] >> 1`` in rotary embeddings,
  ``n & (n - 1)``, ``~n``, ``n.real``): int's own operator gave a plain int, which
  the size-generic record baked into its graph with no check (``x[..., :6]`` for
  every width).  Such a size is now exact, guarded by value (F200).
* ``x.stride()`` read on a tensor with a size-1 dimension: the guard leaves that
  dimension's stride out (no kernel uses it), so a channels-last permute of the
  same shape replayed the first layout's branch and strides (F201).
* ``D = {}; D["s"] = k`` then ``D["s"]`` / ``D.get("s")`` / ``**D``: the stored
  number's symbol was lost on the read, so the record replayed the first call's
  number, unguarded.  A slot given another value later (``D["s"] = 3``,
  ``L[0] = 5`` after ``L = [k]``) was rebuilt from the first value's symbol when
  the container was returned (F202).
"""

from __future__ import annotations

import pytest
import torch
from harness import Call, Case, backends, calls, prog, run_case

ROTATE_HALF = """
import torch

def f(x):
    d = x.shape[-1]
    half = d >> 1
    x1, x2 = x[..., :half], x[..., half:]
    power_of_two = d & (d - 1) == 0
    return torch.cat((-x2, x1), dim=-1), power_of_two, ~d, d.real
"""


def width(n):
    return Call(lambda env: (torch.randn(2, n),))


@backends(inductor=True)
def test_bitwise_operators_on_a_size(backend):
    run_case(
        Case(
            "bitwise_operators_on_a_size",
            prog(ROTATE_HALF),
            [width(n) for n in (8, 12, 16, 32, 12, 8)],
            min_hits=1,
        ),
        backend,
    )


STRIDE_READ = """
import torch

layouts = []

def f(x):
    if x.stride(1) == 1:
        layouts.append("channels_last")
        y = x * 2
    else:
        layouts.append("contiguous")
        y = x * 3
    return y, x.stride()
"""


def contiguous(env):
    return (torch.randn(2, 1, 4, 4),)


def channels_last(env):
    return (torch.randn(2, 4, 4, 1).permute(0, 3, 1, 2),)


@backends()
def test_strides_read_of_a_size_one_dimension(backend):
    run_case(
        Case(
            "strides_read_of_a_size_one_dimension",
            prog(STRIDE_READ),
            [*calls(2, contiguous), *calls(2, channels_last), *calls(2, contiguous)],
            min_hits=3,
        ),
        backend,
    )


LOCAL_DICT_STORE = """
import torch

def f(x, k):
    D = {}
    D["s"] = k
    opts = {}
    opts["alpha"] = k
    return x * D["s"], D.get("s"), torch.add(x, x, **opts), f"{D['s']:.2f}"
"""


@backends(inductor=True)
def test_a_number_stored_in_a_dict_the_call_made(backend):
    run_case(
        Case(
            "a_number_stored_in_a_dict_the_call_made",
            prog(LOCAL_DICT_STORE),
            [Call(lambda env, k=k: (torch.randn(3), k)) for k in (1.5, 2.5, 3.5, 4.5, 2.5)],
        ),
        backend,
    )


ITEM_IN_A_DICT = """
import torch

def f(x):
    D = {}
    D["s"] = x.sum().item()
    if D["s"] > 0:
        return x * D["s"], "positive"
    return x - D["s"], "negative"
"""


@backends()
def test_a_value_read_stored_in_a_dict_the_call_made(backend):
    run_case(
        Case(
            "a_value_read_stored_in_a_dict_the_call_made",
            prog(ITEM_IN_A_DICT),
            [Call(lambda env, v=v: (torch.full((3,), v),)) for v in (1.0, 2.0, -1.0, -3.0, 0.5)],
        ),
        backend,
    )


SLOT_GIVEN_ANOTHER_VALUE = """
import torch

def f(x, k):
    D = {}
    D["s"] = k
    D["s"] = 3
    L = [k]
    L[0] = 5
    return x * 2, D, L
"""


@backends()
def test_a_slot_given_another_value_in_a_returned_container(backend):
    run_case(
        Case(
            "a_slot_given_another_value_in_a_returned_container",
            prog(SLOT_GIVEN_ANOTHER_VALUE),
            [Call(lambda env, k=k: (torch.randn(2), k)) for k in (1.5, 2.5, 3.5, 4.5)],
            min_hits=2,
        ),
        backend,
    )


DOUBLE_WITH_A_VARYING_FLOAT = """
import torch

def f(x, k):
    return x % k, x ** k
"""


def doubles(k):
    return Call(lambda env: (torch.tensor([0.3, 2.25, 3.0, 1.5], dtype=torch.float64), k))


@backends(inductor=True)
def test_a_float64_tensor_with_a_float_that_varies(backend):
    """Inductor hands a varying float to its kernels as a 32-bit float (F204)."""
    run_case(
        Case(
            "a_float64_tensor_with_a_float_that_varies",
            prog(DOUBLE_WITH_A_VARYING_FLOAT),
            [doubles(k) for k in (0.5, 0.25, 1.1, 70000.3, 1e300)],
            tolerance={"rtol": 0.0, "atol": 0.0},
        ),
        backend,
    )


def halves(k):
    return Call(lambda env: (torch.tensor([0.3, 2.25], dtype=torch.float16), k))


@backends(inductor=True)
def test_a_half_tensor_with_a_float_out_of_its_range(backend):
    """Eager raises "cannot be converted to type c10::Half without overflow" (F204)."""
    run_case(
        Case(
            "a_half_tensor_with_a_float_out_of_its_range",
            prog("import torch\n\ndef f(x, k):\n    return x ** k\n"),
            [halves(k) for k in (0.5, 0.25, 1.5, 70000.3, 2.0)],
        ),
        backend,
    )


def complexes(k):
    return Call(lambda env: (torch.tensor([1 + 2j, -0.5j], dtype=torch.complex64), k))


@backends(inductor=True)
def test_a_complex64_tensor_with_a_float_that_varies(backend):
    """Inductor failed to compile the graph once the float was lifted (a guard on it),
    so every later call ran eagerly (F306): it runs as its fx graph."""
    run_case(
        Case(
            "a_complex64_tensor_with_a_float_that_varies",
            prog("import torch\n\ndef f(z, s):\n    return (z * s).abs()\n"),
            [complexes(k) for k in (2.0, 3.0, 4.0, 5.0, 6.0)],
            min_hits=2,
        ),
        backend,
    )


RANK_CHANGES = """
import torch

def f(t):
    match t.shape:
        case (n,):
            return t * n
        case (n, m) if m > 2:
            return t.sum(1)
        case _:
            return t.sum(0)
"""


@backends()
def test_sizes_that_varied_at_another_rank(backend):
    """A size that varied while the argument had one rank, then an argument of another
    rank: the monitoring run raised an internal error, and monitoring stopped for good
    (every later call eager; results were right)."""
    shapes = [(2, 3), (2, 3), (2, 4), (5,), (6,), (2, 5), (7,), (2, 6), (8,)]
    run_case(
        Case(
            "sizes_that_varied_at_another_rank",
            prog(RANK_CHANGES),
            [Call(lambda env, s=s: (torch.ones(s),)) for s in shapes],
            min_hits=5,
        ),
        backend,
    )


SIZES_IN_NAMEDTUPLES_AND_BYTES = """
import collections
import torch

Dims = collections.namedtuple("Dims", "b n")

class Shape(tuple):
    pass

def f(x):
    d = Dims(*x.shape)
    return x.sum(1) * d.n, d.n, x.new_zeros(Shape(x.shape)), x * x.nbytes, x.nbytes
"""


@backends(inductor=True)
def test_sizes_in_a_namedtuple_a_tuple_subclass_and_nbytes(backend):
    """``Dims(*x.shape)`` and ``Shape(x.shape)`` got plain ints with no check, and
    ``x.nbytes`` was not known as a size read: the size-generic record kept the
    second call's numbers for every later size (F206)."""
    run_case(
        Case(
            "sizes_in_a_namedtuple_a_tuple_subclass_and_nbytes",
            prog(SIZES_IN_NAMEDTUPLES_AND_BYTES),
            [width(n) for n in (3, 5, 8, 13, 2, 5)],
        ),
        backend,
    )


SIZE_DUNDERS = """
import torch

def f(x):
    n = x.shape[1]
    return x * n.__index__(), n.__add__(1), n.__float__(), n.__bool__(), n.__eq__(3)
"""


@backends()
def test_a_size_s_own_methods_called_by_name(backend):
    """``x.shape[1].__index__()`` raised AttributeError from fullgraph's SizeInt into the
    program on the size-generic monitoring run (F206)."""
    run_case(
        Case(
            "a_size_s_own_methods_called_by_name",
            prog(SIZE_DUNDERS),
            [width(n) for n in (3, 5, 8, 3, 13)],
        ),
        backend,
    )


MATH_OF_A_COUNTER = """
import torch

step = 0

def f(x):
    global step
    step += 1
    import math  # not a global of the program: the guard must bind it itself
    if math.cos(math.pi * step / 4) > 0:
        return x + 1
    return x - 1
"""


@backends()
def test_a_branch_on_math_of_a_varying_number(backend):
    # The guard's condition named ``math.cos`` with ``math`` unbound in its namespace:
    # every replay raised NameError and ran the program again, never replaying.
    run_case(
        Case(
            "branch_on_math_of_a_varying_number",
            prog(MATH_OF_A_COUNTER),
            calls(12, lambda env: (torch.ones(2),)),
            min_hits=4,
        ),
        backend,
    )


RUNNING_AVERAGE = """
import torch

class Meter:
    avg = None

m = Meter()

@torch.no_grad()
def f(x):
    v = x.pow(2).mean().item()
    m.avg = v if m.avg is None else 0.9 * m.avg + 0.1 * v
    return x * (m.avg is not None), m.avg
"""


def test_a_number_tested_against_none_stays_followed():
    # F309 (a cost): ``m.avg is None`` took the number's value, so a lazily
    # initialised running average made a record per call; its type decides.
    script = calls(6, lambda env: (torch.randn(4),))
    watch = lambda env: env.ns.m.avg
    run_case(
        Case("running_average", prog(RUNNING_AVERAGE), script, watch=watch, min_hits=3), "eager"
    )


PASSED_ON = """
import torch

def scaled(logits, t, floor=0.0):
    return logits / t + floor

class Temperature(torch.nn.Module):
    def forward(self, logits, t):
        return logits / t

temperature = Temperature()

def helper(logits, t):
    return scaled(logits, t).softmax(-1)

def submodule(logits, t):
    return temperature(logits, t).softmax(-1)

@torch.no_grad()
def decorated(logits, t):
    return (logits / t).softmax(-1)

def same_object_twice(logits, t):
    return scaled(logits, t, t)

def a_literal_beside_it(logits, t):
    return scaled(logits, 2.0, t) + scaled(logits, t)

def logged(fn):  # F338: a decorator's ``*args, **kwargs`` wrapper
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper

@logged
def wrapped_helper(logits, t, floor=0.0):
    return logits / t + floor

def through_a_wrapper(logits, t):
    return wrapped_helper(logits, t) + wrapped_helper(logits, t=t, floor=1.0)

def forward_kwargs(logits, **kw):
    return scaled(logits, **kw)

def through_kwargs(logits, t):
    return forward_kwargs(logits, t=t, floor=1.0)

def a_packed_number_read_in_the_wrapper(logits, t):
    return peek(logits, t)

def peek(*args):
    return args[0] * (args[1] > 0.9)
"""


@pytest.mark.parametrize(
    "target",
    [
        "helper",
        "submodule",
        "decorated",
        "same_object_twice",
        "a_literal_beside_it",
        "through_a_wrapper",
        "through_kwargs",
        "a_packed_number_read_in_the_wrapper",
    ],
)
def test_a_number_that_varies_passed_on_to_a_function(target):
    # F312 (a cost): a number passed on to a helper, a submodule, or through torch's
    # ``@no_grad()`` wrapper lost its symbol at the call: a record per value (a
    # sampling temperature, per request), the recompile limit, then eager.
    temperatures = (0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 0.5)
    script = [Call(lambda env, t=t: (torch.randn(1, 8), t)) for t in temperatures]
    build = prog(PASSED_ON, target=target, name=f"passed49{target}")
    # (one object handed twice is ambiguous: guarded by value, correct but per value)
    hits = 4
    if target in ("same_object_twice", "a_packed_number_read_in_the_wrapper"):
        hits = None  # ambiguous, or read where its value decides: guarded by value
    run_case(Case(f"passed_on_{target}", build, script, min_hits=hits), "eager")
