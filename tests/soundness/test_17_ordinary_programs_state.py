"""Class 17: more ordinary programs: in-place changes of an input's metadata,
lazy initialisation inside ``forward``, results that are the input itself,
output strides, module containers grown between calls, Python floats that
become sizes, sort keys computed from tensors.

Same style as class 16: several calls, the state changed between them with
``Do`` steps, the record replayed after the change.
"""

from __future__ import annotations

from functools import partial

import torch
from harness import (
    Call,
    Case,
    Do,
    backends,
    calls,
    execg,
    mat,
    run_case,
    vec,
)
from harness import prog as shared_prog

prog = partial(shared_prog, name="ordinary17")


# ---------------------------------------------------------------------------
# In-place changes of an input's metadata


INPLACE_METADATA = """
import torch

def f(x):
    x.unsqueeze_(0)
    x.transpose_(0, 1)
    return x.shape, x * 2
"""


@backends()
def test_inplace_view_ops_on_input(backend):
    run_case(
        Case(
            "inplace_view_ops_on_input",
            prog(INPLACE_METADATA),
            calls(3, lambda env: torch.randn(3)),
            watch=lambda env: {},
        ),
        backend,
    )


def test_inplace_view_ops_change_the_callers_tensor():
    """``x.unsqueeze_(0)`` changes the caller's tensor: its shape after the call."""
    import fullgraph.runtime as fr

    def f(x):
        x.unsqueeze_(0)
        return x.sum()

    compiled = fr.compile(f, backend="eager")
    shapes = []
    for _ in range(3):
        x = torch.ones(3)
        compiled(x)
        shapes.append(tuple(x.shape))
    assert shapes == [(1, 3)] * 3


def test_resize_of_input_changes_the_callers_tensor():
    import fullgraph.runtime as fr

    def f(x):
        x.resize_(2, 2)
        return x.shape[0]

    compiled = fr.compile(f, backend="eager")
    shapes = []
    for _ in range(3):
        x = torch.ones(4)
        compiled(x)
        shapes.append(tuple(x.shape))
    assert shapes == [(2, 2)] * 3


def test_requires_grad_set_on_input_inside():
    import fullgraph.runtime as fr

    def f(x):
        x.requires_grad_()
        return (x * 2).sum()

    compiled = fr.compile(f, backend="eager")
    flags = []
    for _ in range(3):
        x = torch.ones(3)
        y = compiled(x)
        flags.append((x.requires_grad, y.requires_grad))
    assert flags == [(True, True)] * 3


def test_data_assigned_on_input_inside():
    import fullgraph.runtime as fr

    def f(x, y):
        x.data = y * 2
        return x.sum()

    compiled = fr.compile(f, backend="eager")
    seen = []
    for _ in range(3):
        x = torch.zeros(3)
        compiled(x, torch.ones(2))
        seen.append(x.tolist())
    assert seen == [[2.0, 2.0]] * 3


# ---------------------------------------------------------------------------
# Lazy initialisation inside forward


ACTNORM = """
import torch

class ActNorm(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.loc = torch.nn.Parameter(torch.zeros(n))
        self.scale = torch.nn.Parameter(torch.ones(n))
        self.initialized = False

    def forward(self, x):
        if not self.initialized:
            with torch.no_grad():
                self.loc.copy_(-x.mean(0))
                self.scale.copy_(1 / (x.std(0) + 1e-6))
            self.initialized = True
        return (x + self.loc) * self.scale

net = ActNorm(4)
"""


@backends()
def test_actnorm_data_dependent_init(backend):
    def batch(env):
        return torch.randn(8, 4)

    run_case(
        Case(
            "actnorm_data_dependent_init",
            prog(ACTNORM, "net"),
            [*calls(3, batch), execg("net.initialized = False"), *calls(3, batch)],
        ),
        backend,
    )


LAZY_BUFFER = """
import torch

class Running(torch.nn.Module):
    def forward(self, x):
        if not hasattr(self, "total"):
            self.register_buffer("total", torch.zeros(x.shape[-1]))
        self.total.add_(x.sum(0))
        return x - self.total
net = Running()
"""


@backends()
def test_buffer_registered_on_first_forward(backend):
    run_case(
        Case(
            "buffer_registered_on_first_forward",
            prog(LAZY_BUFFER, "net"),
            [*calls(3, mat), execg("del net.total"), *calls(2, mat)],
        ),
        backend,
    )


LAST_INPUT = """
import torch

class Remember(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.last = None

    def forward(self, x):
        y = self.lin(x)
        prev = self.last
        self.last = y.detach()
        if prev is None:
            return y
        return y + prev
net = Remember()
"""


@backends()
def test_previous_output_kept_on_module(backend):
    run_case(
        Case(
            "previous_output_kept_on_module",
            prog(LAST_INPUT, "net"),
            [*calls(4, mat), execg("net.last = None"), *calls(2, mat)],
            watch=lambda env: {"last": env.ns.net.last},
        ),
        backend,
    )


EVAL_INSIDE_FORWARD = """
import torch

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = torch.nn.Dropout(0.5)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls >= 3:
            self.training = False
        return self.drop(x)
net = Net()
"""


@backends()
def test_training_flag_set_inside_forward(backend):
    run_case(
        Case("training_flag_set_inside_forward", prog(EVAL_INSIDE_FORWARD, "net"), calls(5, mat)),
        backend,
    )


# ---------------------------------------------------------------------------
# Results that are the input itself (no-op conversions)


NOOP_CONVERSIONS = """
import torch

def f(x):
    return x.contiguous(), x.float(), x.to("cpu"), torch.as_tensor(x), x.type(torch.float32)
"""


@backends()
def test_noop_conversions_return_the_input(backend):
    run_case(
        Case(
            "noop_conversions_return_the_input",
            prog(NOOP_CONVERSIONS),
            [
                *calls(2, lambda env: torch.randn(2, 3)),
                *calls(2, lambda env: torch.randn(3, 2).t()),
                *calls(2, lambda env: torch.randn(2, 3).double()),
                *calls(2, lambda env: torch.randn(2, 3)),
            ],
        ),
        backend,
    )


def test_output_strides_follow_eager():
    """A caller that calls ``.view`` on the result needs eager's strides."""
    import fullgraph.runtime as fr

    def f(x):
        return x * 2, torch.relu(x), x.transpose(1, 2), x.permute(0, 2, 3, 1).contiguous()

    compiled = fr.compile(f, backend="eager")
    inputs = [
        torch.randn(2, 3, 4, 5),
        torch.randn(2, 3, 4, 5),
        torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last),
        torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last),
        torch.randn(2, 5, 4, 3).permute(0, 3, 2, 1),
        torch.randn(2, 5, 4, 3).permute(0, 3, 2, 1),
    ]
    for x in inputs:
        expected = [t.stride() for t in f(x)]
        got = [t.stride() for t in compiled(x)]
        assert got == expected, (x.stride(), got, expected)
    assert compiled.stats.hits >= 1


# ---------------------------------------------------------------------------
# Module containers changed between calls


CONTAINERS = """
import torch

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh(), torch.nn.Linear(4, 4))
        self.extra = torch.nn.ParameterList([torch.nn.Parameter(torch.ones(4))])
        self.gates = torch.nn.ParameterDict({"a": torch.nn.Parameter(torch.ones(4))})
        self.depth = 3

    def forward(self, x):
        x = self.blocks[: self.depth](x)
        for p in self.extra:
            x = x * p
        for name in sorted(self.gates):
            x = x + self.gates[name]
        return x, sum(p.numel() for p in self.parameters())

net = Net()
"""


@backends()
def test_sequential_slice_parameter_list_and_dict_change(backend):
    run_case(
        Case(
            "sequential_slice_parameter_list_and_dict_change",
            prog(CONTAINERS, "net"),
            [
                *calls(2, mat),
                execg("net.depth = 1"),
                *calls(2, mat),
                execg("net.extra.append(torch.nn.Parameter(torch.full((4,), 2.0)))"),
                *calls(2, mat),
                execg("net.gates['b'] = torch.nn.Parameter(torch.full((4,), -1.0))"),
                *calls(2, mat),
                execg("net.blocks.append(torch.nn.ReLU()); net.depth = 4"),
                *calls(2, mat),
                execg("net.register_parameter('unused', torch.nn.Parameter(torch.zeros(3)))"),
                *calls(2, mat),
            ],
        ),
        backend,
    )


DYNAMIC_GETATTR = """
import torch

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer0 = torch.nn.Linear(4, 4)
        self.layer1 = torch.nn.Linear(4, 4)
        self.use = 0

    def forward(self, x):
        return getattr(self, f"layer{self.use}")(x)

net = Net()
"""


@backends()
def test_submodule_chosen_by_name(backend):
    run_case(
        Case(
            "submodule_chosen_by_name",
            prog(DYNAMIC_GETATTR, "net"),
            [
                *calls(2, mat),
                execg("net.use = 1"),
                *calls(2, mat),
                execg("net.layer1 = torch.nn.Identity()"),
                *calls(2, mat),
            ],
        ),
        backend,
    )


# ---------------------------------------------------------------------------
# Python floats that become sizes or values after they vary


LIFTED_FLOAT_SIZES = """
import torch

def f(x, s):
    r = torch.arange(0, s, 0.5)
    l = torch.linspace(0, s, 3)
    return x.clamp(min=s) + x.pow(s), r, l, torch.full((2,), s), x.new_full((2,), s)
"""


@backends()
def test_lifted_float_in_factories(backend):
    run_case(
        Case(
            "lifted_float_in_factories",
            prog(LIFTED_FLOAT_SIZES),
            [
                Call(lambda env, s=s: (torch.rand(3) + 0.5, s), label=f"s={s}")
                for s in (1.0, 1.5, 2.0, 3.0, 2.25, 1.0)
            ],
        ),
        backend,
    )


LIFTED_DROPOUT = """
import torch
import torch.nn.functional as F

def f(x, p):
    return F.dropout(x, p=p, training=True), torch.rand(2)
"""


@backends()
def test_lifted_dropout_probability(backend):
    run_case(
        Case(
            "lifted_dropout_probability",
            prog(LIFTED_DROPOUT),
            [
                Call(lambda env, p=p: (torch.ones(8), p), label=f"p={p}")
                for p in (0.1, 0.2, 0.5, 0.0, 0.9, 0.1)
            ],
        ),
        backend,
    )


LIFTED_INT_MIXED = """
import torch

def f(x, n):
    return x * n, x // n, x ** n, n * 0.5, n // 2, -n, abs(n), n > 3
"""


@backends()
def test_lifted_int_python_arithmetic(backend):
    run_case(
        Case(
            "lifted_int_python_arithmetic",
            prog(LIFTED_INT_MIXED),
            [
                Call(lambda env, n=n: (torch.arange(1, 5), n), label=f"n={n}")
                for n in (2, 3, 5, 1, 7, -2, 4)
            ],
        ),
        backend,
    )


# ---------------------------------------------------------------------------
# Sorting and choosing with keys computed from tensors


SORT_BY_TENSOR = """
import torch

def f(xs):
    ranked = sorted(xs, key=lambda t: t.sum().item())
    best = max(range(len(xs)), key=lambda i: xs[i].max().item())
    return torch.stack(ranked), best
"""


@backends()
def test_sorted_by_tensor_key(backend):
    run_case(
        Case(
            "sorted_by_tensor_key",
            prog(SORT_BY_TENSOR),
            calls(5, lambda env: [torch.randn(3) for _ in range(3)]),
        ),
        backend,
    )


FORMAT_VALUES = """
import torch

def f(x):
    loss = (x ** 2).mean()
    msg = f"loss={loss.item():.4f} n={x.numel()} dtype={x.dtype}"
    print(msg)
    return loss, msg, str(x.shape), repr(x.dtype)
"""


@backends()
def test_formatted_values_returned_and_printed(backend):
    run_case(
        Case(
            "formatted_values_returned_and_printed",
            prog(FORMAT_VALUES),
            [
                *calls(3, vec),
                Call(lambda env: torch.randn(6)),
                Call(lambda env: torch.randn(6).double()),
            ],
        ),
        backend,
    )


CLOSURES_PER_CALL = """
import torch

def f(x, n):
    fns = [lambda v, i=i: v * i for i in range(n)]
    late = [lambda v: v * i for i in range(n)]
    def add(v):
        return v + n
    return sum(fn(x) for fn in fns), sum(fn(x) for fn in late), list(map(add, [x, x]))
"""


@backends()
def test_closures_made_per_call(backend):
    run_case(
        Case(
            "closures_made_per_call",
            prog(CLOSURES_PER_CALL),
            [Call(lambda env, n=n: (torch.ones(2), n), label=f"n={n}") for n in (2, 2, 3, 3, 1, 4)],
        ),
        backend,
    )


ID_CACHE = """
import torch

weights = {}

def f(x, w):
    key = id(w)
    if key not in weights:
        weights[key] = w.t().contiguous()
    return x @ weights[key]
"""


@backends()
def test_cache_keyed_by_id(backend):
    def build():
        env = prog(ID_CACHE)()
        torch.manual_seed(3)
        env.w1 = torch.randn(4, 4)
        env.w2 = torch.randn(4, 4)
        return env

    run_case(
        Case(
            "cache_keyed_by_id",
            build,
            [
                Call(lambda env: (torch.randn(2, 4), env.w1)),
                Call(lambda env: (torch.randn(2, 4), env.w1)),
                Call(lambda env: (torch.randn(2, 4), env.w2)),
                Call(lambda env: (torch.randn(2, 4), env.w2)),
                Call(lambda env: (torch.randn(2, 4), env.w1)),
            ],
            watch=lambda env: {"n": len(env.ns.weights)},
        ),
        backend,
    )


RETAIN_GRAD = """
import torch

w = torch.nn.Parameter(torch.ones(3))

def f(x):
    h = x * w
    h.retain_grad()
    loss = (h ** 2).sum()
    return loss, h
"""


def test_retain_grad_on_intermediate_survives_replay():
    import fullgraph.runtime as fr

    ns = {}
    exec(RETAIN_GRAD, ns)  # noqa: S102
    compiled = fr.compile(ns["f"], backend="eager")
    grads = []
    for _ in range(3):
        loss, h = compiled(torch.full((3,), 2.0))
        loss.backward()
        grads.append(None if h.grad is None else h.grad.tolist())
    assert grads == [[4.0, 4.0, 4.0]] * 3


NUMEL_PROD = """
import math
import functools
import operator
import torch

def f(x):
    n = math.prod(x.shape)
    m = functools.reduce(operator.mul, x.shape, 1)
    return x.reshape(n) * m, len(x), x.size(-1), x.dim()
"""


@backends()
def test_shape_products_with_changing_sizes(backend):
    run_case(
        Case(
            "shape_products_with_changing_sizes",
            prog(NUMEL_PROD),
            [
                Call(lambda env, s=s: torch.randn(*s), label=str(s))
                for s in ((2, 3), (2, 3), (3, 3), (4, 3), (2, 5), (2, 3, 1))
            ],
        ),
        backend,
    )


# ---------------------------------------------------------------------------
# Containers and scalars that go straight into a torch call


CAT_STACK = """
import torch

def f(xs, ys):
    return torch.cat(xs), torch.stack(ys)
"""


@backends()
def test_cat_and_stack_of_changing_length(backend):
    def args(n):
        return lambda env: (
            [torch.randn(2) for _ in range(n)],
            tuple(torch.randn(2) for _ in range(n)),
        )

    run_case(
        Case(
            "cat_and_stack_of_changing_length",
            prog(CAT_STACK),
            [
                Call(args(2)),
                Call(args(2)),
                Call(args(3)),
                Call(args(3)),
                Call(args(1)),
                Call(args(2)),
            ],
        ),
        backend,
    )


STAR_LIST = """
import torch

def f(x, dims, shape):
    return x.permute(*dims), x.reshape(*shape)
"""


@backends()
def test_star_unpacked_list_into_torch_call(backend):
    def args(dims, shape):
        return lambda env: (torch.randn(2, 3), list(dims), list(shape))

    run_case(
        Case(
            "star_unpacked_list_into_torch_call",
            prog(STAR_LIST),
            [
                Call(args((0, 1), (3, 2))),
                Call(args((0, 1), (3, 2))),
                Call(args((1, 0), (6, 1))),
                Call(args((0, 1), (3, 2))),
            ],
        ),
        backend,
    )


DOUBLE_STAR = """
import torch
import torch.nn.functional as F

def f(x, opts):
    return F.pad(x, **opts)
"""


@backends()
def test_double_star_options_into_torch_call(backend):
    def args(pad, value=0.0):
        return lambda env: (torch.randn(2, 3), {"pad": pad, "value": value})

    run_case(
        Case(
            "double_star_options_into_torch_call",
            prog(DOUBLE_STAR),
            [
                Call(args((1, 0))),
                Call(args((1, 0))),
                Call(args((0, 1))),
                Call(args((0, 1), 5.0)),
                Call(args((1, 0))),
            ],
        ),
        backend,
    )


NUMPY_SCALARS = """
import torch

def f(x, s, i):
    return x * s, x[i]
"""


@backends()
def test_numpy_scalar_arguments(backend):
    import numpy as np

    def args(s, i):
        return lambda env: (torch.arange(6.0), np.float64(s), np.int64(i))

    run_case(
        Case(
            "numpy_scalar_arguments",
            prog(NUMPY_SCALARS),
            [
                Call(args(2.0, 1)),
                Call(args(2.0, 1)),
                Call(args(3.0, 1)),
                Call(args(3.0, 4)),
                Call(args(2.0, 1)),
            ],
        ),
        backend,
    )


MEMORY_FORMAT = """
import torch

def f(x, fmt):
    y = x.contiguous(memory_format=fmt)
    return y, y.stride(), y.is_contiguous()
"""


@backends()
def test_memory_format_argument(backend):
    def args(fmt):
        return lambda env: (torch.randn(1, 2, 3, 3), fmt)

    run_case(
        Case(
            "memory_format_argument",
            prog(MEMORY_FORMAT),
            [
                Call(args(torch.contiguous_format)),
                Call(args(torch.contiguous_format)),
                Call(args(torch.channels_last)),
                Call(args(torch.channels_last)),
                Call(args(torch.preserve_format)),
                Call(args(torch.contiguous_format)),
            ],
        ),
        backend,
    )


INDEX_TUPLE = """
import torch

def f(x, index):
    return x[index]
"""


@backends()
def test_index_tuple_with_slices(backend):
    def args(index):
        return lambda env: (torch.arange(12.0).reshape(3, 4), index)

    run_case(
        Case(
            "index_tuple_with_slices",
            prog(INDEX_TUPLE),
            [
                Call(args((slice(None), 0))),
                Call(args((slice(None), 0))),
                Call(args((slice(None), 2))),
                Call(args((slice(1, None), 2))),
                Call(args((0, slice(None, 2)))),
                Call(args((Ellipsis, 1))),
                Call(args((slice(None), 0))),
            ],
        ),
        backend,
    )


# ---------------------------------------------------------------------------
# Containers the function changes: the value it reads back


def with_state(source, make_state):
    def build():
        env = prog(source)()
        env.state = make_state()
        return env

    return build


LIST_POP = """
import torch

def f(x, stack):
    v = stack.pop() if stack else None
    return x if v is None else x + v
"""


@backends()
def test_list_pop_returns_each_item(backend):
    run_case(
        Case(
            "list_pop_returns_each_item",
            with_state(LIST_POP, lambda: [1.0, 2.0, 3.0]),
            calls(4, lambda env: (torch.zeros(1), env.state)),
        ),
        backend,
    )


DICT_POP = """
import torch

def f(x, counts):
    v = counts.pop("k", 0)
    counts["k"] = v + 1
    return x * v
"""


@backends()
def test_dict_pop_then_set(backend):
    run_case(
        Case(
            "dict_pop_then_set",
            with_state(DICT_POP, dict),
            calls(4, lambda env: (torch.ones(1), env.state)),
        ),
        backend,
    )


LIST_IADD = """
import torch

def f(x, log):
    log += [x.sum().item()]
    return x * len(log)
"""


@backends()
def test_list_iadd_on_argument(backend):
    run_case(
        Case(
            "list_iadd_on_argument",
            with_state(LIST_IADD, list),
            calls(4, lambda env: (torch.randn(2), env.state)),
        ),
        backend,
    )


OTHER_CONTAINER_EFFECTS = """
import bisect
import collections
import heapq
import torch

def f(x, s):
    v = x.sum().item()
    s["ext"].extend([v, 1.0])
    s["ins"].insert(0, v)
    heapq.heappush(s["heap"], -v)
    bisect.insort(s["sorted"], round(v, 3))
    s["set"].add(len(s["ext"]) % 3)
    s["deque"].appendleft(v)
    s["upd"].update({f"k{len(s['upd'])}": v})
    return x * s["heap"][0], len(s["set"]), list(s["deque"])
"""


@backends()
def test_container_methods_on_argument(backend):
    def make():
        return {
            "ext": [],
            "ins": [],
            "heap": [],
            "sorted": [],
            "set": set(),
            "deque": collections.deque(maxlen=2),
            "upd": {},
        }

    import collections

    def watch(env):
        return {
            k: (list(v) if isinstance(v, collections.deque) else v) for k, v in env.state.items()
        }

    run_case(
        Case(
            "container_methods_on_argument",
            with_state(OTHER_CONTAINER_EFFECTS, make),
            calls(4, lambda env: (torch.randn(2), env.state)),
            watch=watch,
        ),
        backend,
    )


# ---------------------------------------------------------------------------
# Module attributes that go straight into a torch call; compiled code calling
# compiled code; torch.func transforms


PAD_ATTRIBUTE = """
import torch
import torch.nn.functional as F

class Padded(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.pad = [1, 0]
        self.table = [1.0, 2.0, 3.0]

    def forward(self, x):
        return F.pad(x, self.pad) * torch.tensor(self.table).sum()

net = Padded()
"""


@backends()
def test_list_attribute_into_torch_call(backend):
    run_case(
        Case(
            "list_attribute_into_torch_call",
            prog(PAD_ATTRIBUTE, "net"),
            [
                *calls(2, mat),
                execg("net.pad = [0, 2]"),
                *calls(2, mat),
                execg("net.table[0] = 10.0"),
                *calls(2, mat),
            ],
        ),
        backend,
    )


NESTED_COMPILED = """
import torch
import fullgraph.runtime as fr

lin = torch.nn.Linear(4, 4)
inner = fr.compile(lin, backend="eager")
SCALE = 2.0

def f(x):
    return inner(x) * SCALE
"""


@backends()
def test_compiled_function_calls_compiled_module(backend):
    run_case(
        Case(
            "compiled_function_calls_compiled_module",
            prog(NESTED_COMPILED),
            [
                *calls(2, mat),
                execg("SCALE = 3.0"),
                *calls(2, mat),
                execg("with torch.no_grad(): lin.weight.fill_(0.5)"),
                *calls(2, mat),
            ],
        ),
        backend,
    )


TORCH_FUNC = """
import torch

def f(x):
    rows = torch.func.vmap(lambda r: (r * r).sum())(x)
    g = torch.func.grad(lambda v: (v ** 3).sum())(x[0])
    return rows, g
"""


@backends()
def test_torch_func_transforms_inside(backend):
    run_case(Case("torch_func_transforms_inside", prog(TORCH_FUNC), calls(3, mat)), backend)


# ---------------------------------------------------------------------------
# Warnings a replay issues: where they come from


WARNING_PROGRAM = """
import warnings
import torch

def f(x):
    warnings.warn("legacy option")
    return x * 2
"""


def test_replayed_warning_keeps_its_location():
    import warnings

    from harness import load_program

    import fullgraph.runtime as fr

    ns = load_program(WARNING_PROGRAM, "warn_location")
    compiled = fr.compile(ns.f, backend="eager")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            compiled(torch.ones(2))
    assert compiled.stats.hits >= 1
    locations = {(w.filename, w.lineno) for w in caught}
    assert len(caught) == 3 and len(locations) == 1, locations


def test_replayed_warning_respects_module_filter():
    import warnings

    from harness import load_program

    import fullgraph.runtime as fr

    ns = load_program(WARNING_PROGRAM, "warn_filter")
    compiled = fr.compile(ns.f, backend="eager")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", module=ns.__name__)
        for _ in range(3):
            compiled(torch.ones(2))
    assert compiled.stats.hits >= 1
    assert [str(w.message) for w in caught] == []


# ---------------------------------------------------------------------------
# The RNG state saved and restored inside the function


FORK_RNG = """
import torch

def f(x):
    with torch.random.fork_rng():
        noise = torch.randn(3)
    return x + noise, torch.rand(1)
"""


@backends()
def test_fork_rng_inside(backend):
    run_case(Case("fork_rng_inside", prog(FORK_RNG), calls(3, lambda env: torch.zeros(3))), backend)


SAVE_RESTORE_RNG = """
import torch

def f(x):
    state = torch.get_rng_state()
    a = torch.randn(3)
    torch.set_rng_state(state)
    b = torch.randn(3)
    return x + a - b, torch.rand(1)
"""


@backends()
def test_rng_state_saved_and_restored_inside(backend):
    run_case(
        Case(
            "rng_state_saved_and_restored_inside",
            prog(SAVE_RESTORE_RNG),
            calls(3, lambda env: torch.zeros(3)),
        ),
        backend,
    )


GENERATOR_PER_CALL = """
import torch

def f(x, seed):
    g = torch.Generator().manual_seed(seed)
    return x + torch.randn(3, generator=g), torch.randperm(4, generator=g)
"""


@backends()
def test_generator_made_per_call(backend):
    run_case(
        Case(
            "generator_made_per_call",
            prog(GENERATOR_PER_CALL),
            [
                Call(lambda env, s=s: (torch.zeros(3), s), label=f"seed={s}")
                for s in (1, 1, 2, 3, 1)
            ],
        ),
        backend,
    )


# ---------------------------------------------------------------------------
# forward replaced (monkeypatched) between calls


FORWARD_PATCH = """
import types
import torch

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.head = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.head(torch.relu(self.lin(x)))

net = Net()
"""


@backends()
def test_forward_monkeypatched_on_instance(backend):
    run_case(
        Case(
            "forward_monkeypatched_on_instance",
            prog(FORWARD_PATCH, "net"),
            [
                *calls(2, mat),
                execg(
                    "net.forward = types.MethodType(lambda self, x: self.head(self.lin(x)) * 10, net)"
                ),
                *calls(2, mat),
            ],
        ),
        backend,
    )


@backends()
def test_forward_monkeypatched_on_class(backend):
    run_case(
        Case(
            "forward_monkeypatched_on_class",
            prog(FORWARD_PATCH, "net"),
            [*calls(2, mat), execg("Net.forward = lambda self, x: self.head(x)"), *calls(2, mat)],
        ),
        backend,
    )


@backends()
def test_submodule_forward_monkeypatched(backend):
    run_case(
        Case(
            "submodule_forward_monkeypatched",
            prog(FORWARD_PATCH, "net"),
            [*calls(2, mat), execg("net.lin.forward = lambda x: x * 0 - 1"), *calls(2, mat)],
        ),
        backend,
    )


CALL_PATCH = """
import torch

class Affine:
    def __init__(self):
        self.k = 2.0

    def __call__(self, x):
        return x * self.k

aff = Affine()
"""


@backends()
def test_call_monkeypatched_on_class(backend):
    run_case(
        Case(
            "call_monkeypatched_on_class",
            prog(CALL_PATCH, "aff"),
            [
                *calls(2, vec),
                execg("Affine.__call__ = lambda self, x: x * self.k + 100"),
                *calls(2, vec),
            ],
        ),
        backend,
    )


# ---------------------------------------------------------------------------
# A whole training loop as the compiled function: train and eval steps


TRAINING_LOOP = """
import torch
import torch.nn.functional as F

torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(), torch.nn.Dropout(0.2), torch.nn.Linear(8, 1)
)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
history = []

def step(x, y, mode):
    if mode == "train":
        model.train()
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        history.append(loss.item())
        return loss.detach(), norm
    model.eval()
    with torch.no_grad():
        out = F.mse_loss(model(x), y)
    model.train()
    return out, None
"""


@backends()
def test_training_loop_with_eval_steps(backend):
    def batch(mode):
        return lambda env: (torch.randn(6, 4), torch.randn(6, 1), mode)

    script = []
    for i in range(8):
        script.append(Call(batch("train"), label="train"))
        if i % 3 == 2:
            script.append(Call(batch("eval"), label="eval"))

    def watch(env):
        return {
            "state": dict(env.ns.model.state_dict()),
            "lr": env.ns.opt.param_groups[0]["lr"],
            "history": list(env.ns.history),
        }

    run_case(
        Case("training_loop_with_eval_steps", prog(TRAINING_LOOP, "step"), script, watch=watch),
        backend,
    )


COMPREHENSION_OVER_ARGUMENT = """
import torch

layers = [torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)]

def f(x, scale, n):
    outs = [layer(x) * scale for layer in layers]
    total = sum(o.sum() * scale for o in outs)
    def shifted(v, k=scale):
        return v + k
    return torch.stack(outs), total, shifted(x), [x * i for i in range(n)][-1]
"""


@backends()  # F53 (fixed in 1be4d10)
def test_comprehension_over_changing_argument(backend):
    run_case(
        Case(
            "comprehension_over_changing_argument",
            prog(COMPREHENSION_OVER_ARGUMENT),
            [
                Call(lambda env, s=s, n=n: (torch.randn(2, 4), s, n), label=f"scale={s} n={n}")
                for s, n in ((1.0, 2), (1.0, 2), (2.0, 3), (2.0, 3), (0.5, 4), (3.0, 2))
            ],
        ),
        backend,
    )


# ---------------------------------------------------------------------------
# Shapes of F53 / F57 that the fixes of 1be4d10 do not cover


TUPLE_STACK = """
import torch

def f(xs):
    return torch.stack(xs)
"""


@backends()
def test_stack_of_tuple_changing_length(backend):
    def args(n):
        return lambda env: (tuple(torch.randn(2) for _ in range(n)),)

    run_case(
        Case(
            "stack_of_tuple_changing_length",
            prog(TUPLE_STACK),
            [Call(args(2)), Call(args(2)), Call(args(3)), Call(args(1)), Call(args(2))],
        ),
        backend,
    )


NESTED_DEFAULT = """
import torch

def f(x, scale):
    def shifted(v, k=scale):
        return v * k
    return shifted(x)
"""


@backends()
def test_nested_default_from_changing_argument(backend):
    run_case(
        Case(
            "nested_default_from_changing_argument",
            prog(NESTED_DEFAULT),
            [
                Call(lambda env, s=s: (torch.ones(2), s), label=f"scale={s}")
                for s in (2.0, 3.0, 4.0, 0.5, 2.0)
            ],
        ),
        backend,
    )


# ---------------------------------------------------------------------------
# A torch.nn.functional function patched between calls (as libraries patch
# F.scaled_dot_product_attention): torch's own modules look it up


GELU_NET = """
import torch

net = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.GELU())
"""


@backends()
def test_functional_patched_under_a_torch_module(backend):
    import torch.nn.functional as F

    original = F.gelu

    def patch(env):
        F.gelu = lambda t, approximate="none": torch.tanh(t) * 3

    def restore(env=None):
        F.gelu = original

    try:
        run_case(
            Case(
                "functional_patched_under_a_torch_module",
                prog(GELU_NET, "net"),
                [
                    *calls(2, mat),
                    Do(patch, "F.gelu = tanh * 3"),
                    *calls(2, mat),
                    Do(restore, "restore"),
                    Call(mat),
                ],
            ),
            backend,
        )
    finally:
        restore()


# ---------------------------------------------------------------------------
# Output the function writes to a stream argument: order of print and write


STREAM_OUTPUT = """
import torch

def f(x, out):
    out.write("begin\\n")
    print("sum", round(x.sum().item(), 4), file=out)
    out.write("end\\n")
    return x * 2
"""


@backends()
def test_print_and_write_to_a_stream_argument(backend):
    import io

    def build():
        env = prog(STREAM_OUTPUT)()
        env.out = io.StringIO()
        return env

    run_case(
        Case(
            "print_and_write_to_a_stream_argument",
            build,
            calls(3, lambda env: (torch.ones(2), env.out)),
            watch=lambda env: {"out": env.out.getvalue()},
        ),
        backend,
    )


SHUFFLE = """
import random
import torch

def f(x, order):
    random.shuffle(order)
    return x * order[0], order[-1]
"""


@backends()
def test_shuffle_list_argument_then_read(backend):
    run_case(
        Case(
            "shuffle_list_argument_then_read",
            with_state(SHUFFLE, lambda: [1.0, 2.0, 3.0, 4.0]),
            calls(5, lambda env: (torch.ones(1), env.state)),
        ),
        backend,
    )


HEAPQ = """
import heapq
import torch

def f(x, heap):
    heapq.heapify(heap)
    smallest = heapq.heappop(heap)
    return x * smallest
"""


@backends()
def test_heapq_on_list_argument(backend):
    def args(env):
        return (torch.ones(1), [3.0, 1.0, 2.0, 5.0])

    def build():
        env = prog(HEAPQ)()
        env.heaps = []
        return env

    def call(env):
        heap = [3.0, 1.0, 2.0, 5.0]
        env.heaps.append(heap)
        return (torch.ones(1), heap)

    run_case(
        Case(
            "heapq_on_list_argument",
            build,
            calls(4, call),
            watch=lambda env: {"heaps": [list(h) for h in env.heaps]},
        ),
        backend,
    )


OPERATOR_MUTATIONS = """
import collections
import operator
import torch

def f(x, items, window):
    operator.setitem(items, 0, 9.0)
    operator.iadd(items, [1.0])
    window.rotate(1)
    return x * window[0], len(items)
"""


@backends()
def test_operator_and_deque_mutations_of_arguments(backend):
    import collections

    def build():
        env = prog(OPERATOR_MUTATIONS)()
        env.made = []
        return env

    def call(env):
        items, window = [0.0, 2.0], collections.deque([3.0, 1.0, 2.0])
        env.made.append((items, window))
        return (torch.randn(2), items, window)

    run_case(
        Case(
            "operator_and_deque_mutations_of_arguments",
            build,
            calls(4, call),
            watch=lambda env: {"made": [(list(i), list(w)) for i, w in env.made]},
        ),
        backend,
    )


LIFTED_BIG_INT = """
import torch

def f(x, n):
    return x + n
"""


@backends()
def test_lifted_int_beyond_int64(backend):
    run_case(
        Case(
            "lifted_int_beyond_int64",
            prog(LIFTED_BIG_INT),
            [
                Call(lambda env, n=n: (torch.zeros(2, dtype=torch.int64), n), label=f"n={n}")
                for n in (1, 2, 3, 2**63, 4)
            ],
        ),
        backend,
    )


# ---------------------------------------------------------------------------
# A tensor subclass with a __torch_function__ of its own: the monitor's own
# observations must not go through it


class StrictTensor(torch.Tensor):
    """A wrapper-like subclass that refuses layout queries (as wrapper subclasses
    without real strides do); shared by both twins."""

    refused = {"is_inference", "stride", "is_contiguous", "storage_offset"}

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", str(func))
        if name in cls.refused:
            raise NotImplementedError(f"StrictTensor does not support {name}")
        return super().__torch_function__(func, types, args, kwargs or {})


STRICT_SUBCLASS = """
import torch

def f(x):
    return (x * 2).sum().item()
"""


@backends()
def test_tensor_subclass_with_strict_torch_function(backend):
    run_case(
        Case(
            "tensor_subclass_with_strict_torch_function",
            prog(STRICT_SUBCLASS),
            calls(3, lambda env: torch.ones(2).as_subclass(StrictTensor)),
        ),
        backend,
    )
