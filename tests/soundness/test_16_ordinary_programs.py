"""Class 16: ordinary PyTorch programs an adversarial user would write.

Closures and ``nonlocal`` cells, function defaults, ``functools.partial``
keywords, bound methods, properties and descriptors, ``__getattr__``
objects, dataclass configs and enums changed between calls; module structure
changed (submodules replaced, parameters reassigned, ``.data`` assignment,
dtype conversion, dropout ``p``, buffers added); argument kinds that compare
equal but behave differently (``True`` / ``1``, ``2`` / ``2.0``, ``0.0`` /
``-0.0``, tuple / list / ``torch.Size``, None / tensor, a tensor subclass);
global state read or changed inside the function; loops, generators,
comprehensions, ``try/finally`` with ``break``, dict and set iteration order;
tensor semantics (``tolist()`` driving loops, attributes set on tensors,
lists the function appends to).

Every case calls several times and changes state between calls with ``Do``
steps, so that a record is replayed after the change.
"""

from __future__ import annotations

import torch
from harness import (
    Call,
    Case,
    Do,
    backends,
    calls,
    execg,
    mat,
    prog,
    run_case,
    setg,
    vec,
)

# ---------------------------------------------------------------------------
# Closures, defaults, callables


CLOSURE_CELL = """
import torch

def make():
    scale = 1.0
    def f(x):
        return x * scale
    def set_scale(v):
        nonlocal scale
        scale = v
    return f, set_scale

f, set_scale = make()
"""


@backends()
def test_closure_cell_rebound_between_calls(backend):
    run_case(
        Case(
            "closure_cell_rebound_between_calls",
            prog(CLOSURE_CELL),
            [
                *calls(2, vec),
                execg("set_scale(3.0)"),
                *calls(2, vec),
                execg("set_scale(-0.5)"),
                Call(vec),
                execg("set_scale(1.0)"),
                Call(vec),
            ],
        ),
        backend,
    )


CLOSURE_COUNTER = """
import torch

def make():
    n = 0
    def f(x):
        nonlocal n
        n += 1
        return x * n, n
    def count():
        return n
    return f, count

f, count = make()
"""


@backends()
def test_closure_nonlocal_counter(backend):
    run_case(
        Case(
            "closure_nonlocal_counter",
            prog(CLOSURE_COUNTER),
            calls(4, vec),
            watch=lambda env: {"n": env.ns.count()},
        ),
        backend,
    )


CLOSURE_TENSOR_CELL = """
import torch

def make():
    bias = torch.zeros(4)
    def f(x):
        return x + bias
    def set_bias(t):
        nonlocal bias
        bias = t
    return f, set_bias

f, set_bias = make()
"""


@backends()
def test_closure_tensor_cell_rebound(backend):
    run_case(
        Case(
            "closure_tensor_cell_rebound",
            prog(CLOSURE_TENSOR_CELL),
            [
                *calls(2, vec),
                execg("set_bias(torch.ones(4) * 7)"),
                *calls(2, vec),
                execg("set_bias(torch.ones(2, 4))"),
                Call(vec),
            ],
        ),
        backend,
    )


DEFAULTS_DICT = """
import torch

def f(x, opts={"scale": 2.0, "shift": 0.0}):
    return x * opts["scale"] + opts["shift"]
"""


@backends()
def test_default_argument_dict_mutated_from_outside(backend):
    run_case(
        Case(
            "default_argument_dict_mutated_from_outside",
            prog(DEFAULTS_DICT),
            [
                *calls(2, vec),
                execg("f.__defaults__[0]['scale'] = 5.0"),
                *calls(2, vec),
                execg("f.__defaults__[0]['shift'] = 1.0"),
                Call(vec),
                execg("f.__defaults__ = ({'scale': -1.0, 'shift': 3.0},)"),
                Call(vec),
            ],
        ),
        backend,
    )


KWDEFAULTS = """
import torch

def f(x, *, power=2, eps=1e-6):
    return (x.abs() + eps) ** power
"""


@backends()
def test_kwdefaults_changed(backend):
    run_case(
        Case(
            "kwdefaults_changed",
            prog(KWDEFAULTS),
            [
                *calls(2, vec),
                execg("f.__kwdefaults__['power'] = 3"),
                *calls(2, vec),
                execg("f.__kwdefaults__ = {'power': 1, 'eps': 10.0}"),
                Call(vec),
            ],
        ),
        backend,
    )


PARTIAL_KEYWORDS = """
import functools
import torch
import torch.nn.functional as F

act = functools.partial(F.leaky_relu, negative_slope=0.1)

def f(x):
    return act(x) * 2
"""


@backends()
def test_partial_keywords_dict_mutated(backend):
    run_case(
        Case(
            "partial_keywords_dict_mutated",
            prog(PARTIAL_KEYWORDS),
            [
                *calls(2, vec),
                execg("act.keywords['negative_slope'] = 0.7"),
                *calls(2, vec),
            ],
        ),
        backend,
    )


BOUND_METHODS = """
import torch

class Scaler:
    def __init__(self, s):
        self.s = s
    def apply(self, x):
        return x * self.s

a = Scaler(2.0)
b = Scaler(-3.0)
op = a.apply

def f(x):
    return op(x) + 1
"""


@backends()
def test_bound_method_of_another_instance(backend):
    run_case(
        Case(
            "bound_method_of_another_instance",
            prog(BOUND_METHODS),
            [
                *calls(2, vec),
                setg("op", "b.apply"),
                *calls(2, vec),
                execg("b.s = 10.0"),
                Call(vec),
                setg("op", "a.apply"),
                Call(vec),
            ],
        ),
        backend,
    )


METHOD_PATCHED = """
import torch

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
    def act(self, x):
        return torch.relu(x)
    def forward(self, x):
        return self.act(self.lin(x))

net = Net()
"""


@backends()
def test_method_patched_on_instance_and_class(backend):
    run_case(
        Case(
            "method_patched_on_instance_and_class",
            prog(METHOD_PATCHED, "net"),
            [
                *calls(2, mat),
                execg("net.act = torch.tanh"),
                *calls(2, mat),
                execg("del net.act"),
                Call(mat),
                execg("Net.act = lambda self, x: x * 0 - 1"),
                *calls(2, mat),
            ],
        ),
        backend,
    )


SHADOW_DELETE = """
import torch

class Cfg:
    scale = 2.0

cfg = Cfg()
cfg.scale = 5.0

def f(x):
    return x * cfg.scale
"""


@backends()
def test_instance_attribute_deleted_uncovers_class_attribute(backend):
    run_case(
        Case(
            "instance_attribute_deleted_uncovers_class_attribute",
            prog(SHADOW_DELETE),
            [
                *calls(2, vec),
                execg("del cfg.scale"),
                *calls(2, vec),
                execg("Cfg.scale = 7.0"),
                Call(vec),
                execg("cfg.scale = 1.5"),
                Call(vec),
            ],
        ),
        backend,
    )


PROPERTY = """
import torch

class Layer:
    def __init__(self):
        self._temp = 1.0
    @property
    def inv_temp(self):
        return 1.0 / self._temp

layer = Layer()

def f(x):
    return x * layer.inv_temp
"""


@backends()
def test_property_value_changes(backend):
    run_case(
        Case(
            "property_value_changes",
            prog(PROPERTY),
            [
                *calls(2, vec),
                execg("layer._temp = 4.0"),
                *calls(2, vec),
                execg("Layer.inv_temp = property(lambda self: -2.0)"),
                *calls(2, vec),
            ],
        ),
        backend,
    )


DESCRIPTOR = """
import torch

STATE = {"v": 1.0}

class FromState:
    def __get__(self, obj, objtype=None):
        return STATE["v"]

class Holder:
    factor = FromState()

h = Holder()

def f(x):
    return x * h.factor
"""


@backends()
def test_descriptor_reads_changing_state(backend):
    run_case(
        Case(
            "descriptor_reads_changing_state",
            prog(DESCRIPTOR),
            [
                *calls(2, vec),
                execg("STATE['v'] = 3.0"),
                *calls(2, vec),
                execg("STATE['v'] = -1.0"),
                Call(vec),
            ],
        ),
        backend,
    )


GETATTR_OBJECT = """
import torch

class Registry:
    def __init__(self):
        self._values = {"alpha": 0.5}
    def __getattr__(self, name):
        try:
            return self.__dict__["_values"][name]
        except KeyError:
            raise AttributeError(name)

reg = Registry()

def f(x):
    return x * reg.alpha
"""


@backends()
def test_getattr_object_values_change(backend):
    run_case(
        Case(
            "getattr_object_values_change",
            prog(GETATTR_OBJECT),
            [
                *calls(2, vec),
                execg("reg._values['alpha'] = 4.0"),
                *calls(2, vec),
                execg("reg.alpha = -1.0"),
                Call(vec),
            ],
        ),
        backend,
    )


DATACLASS_CONFIG = """
import dataclasses
import torch

@dataclasses.dataclass
class Config:
    depth: int = 2
    scale: float = 1.0
    use_bias: bool = True

cfg = Config()
bias = torch.ones(4)

def f(x):
    for _ in range(cfg.depth):
        x = torch.tanh(x * cfg.scale)
    if cfg.use_bias:
        x = x + bias
    return x
"""


@backends()
def test_dataclass_config_mutated(backend):
    run_case(
        Case(
            "dataclass_config_mutated",
            prog(DATACLASS_CONFIG),
            [
                *calls(2, vec),
                execg("cfg.depth = 4"),
                *calls(2, vec),
                execg("cfg.scale = 0.25; cfg.use_bias = False"),
                *calls(2, vec),
                execg("cfg = dataclasses.replace(cfg, depth=1)"),
                Call(vec),
            ],
        ),
        backend,
    )


ENUM = """
import enum
import torch

class Mode(enum.Enum):
    TRAIN = "train"
    EVAL = "eval"

class Act(enum.IntEnum):
    RELU = 1
    TANH = 2

mode = Mode.TRAIN
act = Act.RELU

def f(x):
    if mode is Mode.EVAL:
        x = x * 0.5
    if act == 2:
        return torch.tanh(x), act.name
    return torch.relu(x) * act, act.name
"""


@backends()
def test_enum_global_changed(backend):
    run_case(
        Case(
            "enum_global_changed",
            prog(ENUM),
            [
                *calls(2, vec),
                setg("mode", "Mode.EVAL"),
                *calls(2, vec),
                setg("act", "Act.TANH"),
                *calls(2, vec),
                setg("act", "1"),
                Call(vec),
            ],
        ),
        backend,
    )


# ---------------------------------------------------------------------------
# Module structure


NET = """
import torch

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.act = torch.nn.ReLU()
        self.drop = torch.nn.Dropout(0.0)
        self.register_buffer("scale", torch.ones(4))

    def forward(self, x):
        return self.drop(self.act(self.lin(x))) * self.scale

net = Net()
"""


def net_case(name, changes, **kw):
    script = [*calls(2, mat)]
    for change in changes:
        script += [change, *calls(2, mat)]
    return Case(name, prog(NET, "net"), script, **kw)


@backends()
def test_submodule_replaced(backend):
    run_case(
        net_case(
            "submodule_replaced",
            [execg("net.act = torch.nn.GELU()"), execg("net.act = torch.nn.Identity()")],
        ),
        backend,
    )


@backends()
def test_parameter_reassigned(backend):
    run_case(
        net_case(
            "parameter_reassigned",
            [
                execg(
                    "torch.manual_seed(5); net.lin.weight = torch.nn.Parameter(torch.randn(4, 4))"
                ),
                execg("net.lin.bias = None"),
            ],
        ),
        backend,
    )


@backends()
def test_parameter_data_assigned(backend):
    run_case(
        net_case(
            "parameter_data_assigned",
            [
                execg("net.lin.weight.data = torch.full((4, 4), 0.5)"),
                execg("net.lin.bias.data = torch.arange(4.0)"),
            ],
        ),
        backend,
    )


LINEAR_DATA_RESHAPE = """
import torch

lin = torch.nn.Linear(4, 3)

def f(x):
    return lin(x).sum(-1)
"""


@backends()
def test_parameter_data_assigned_other_shape(backend):
    # .data assignment keeps the Parameter object but changes its shape
    run_case(
        Case(
            "parameter_data_assigned_other_shape",
            prog(LINEAR_DATA_RESHAPE),
            [
                *calls(2, mat),
                execg("lin.weight.data = torch.ones(5, 4); lin.bias.data = torch.zeros(5)"),
                *calls(2, mat),
            ],
        ),
        backend,
    )


@backends()
def test_buffer_reassigned(backend):
    run_case(
        net_case(
            "buffer_reassigned",
            [execg("net.scale = torch.full((4,), 3.0)"), execg("net.scale.fill_(-1.0)")],
        ),
        backend,
    )


@backends()
def test_load_state_dict_between_calls(backend):
    run_case(
        net_case(
            "load_state_dict_between_calls",
            [
                execg(
                    "torch.manual_seed(9); other = Net(); other.scale.fill_(2.0);"
                    " net.load_state_dict(other.state_dict())"
                )
            ],
        ),
        backend,
    )


@backends()
def test_module_converted_to_double(backend):
    def dmat(env):
        return torch.randn(2, 4, dtype=torch.float64)

    run_case(
        Case(
            "module_converted_to_double",
            prog(NET, "net"),
            [
                *calls(2, mat),
                execg("net.double()"),
                *calls(2, dmat),
                execg("net.float()"),
                *calls(2, mat),
            ],
        ),
        backend,
    )


@backends()
def test_module_converted_to_bfloat16(backend):
    def bmat(env):
        return torch.randn(2, 4).to(torch.bfloat16)

    run_case(
        Case(
            "module_converted_to_bfloat16",
            prog(NET, "net"),
            [*calls(2, mat), execg("net.to(torch.bfloat16)"), *calls(2, bmat)],
        ),
        backend,
    )


@backends()
def test_dropout_p_changed(backend):
    run_case(
        net_case("dropout_p_changed", [execg("net.drop.p = 0.5"), execg("net.eval()")]),
        backend,
    )


OPTIONAL_BUFFER = """
import torch

class Masked(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        mask = getattr(self, "mask", None)
        if mask is not None:
            y = y * mask
        return y

net = Masked()
"""


@backends()
def test_non_persistent_buffer_registered_later(backend):
    run_case(
        Case(
            "non_persistent_buffer_registered_later",
            prog(OPTIONAL_BUFFER, "net"),
            [
                *calls(2, mat),
                execg(
                    "net.register_buffer('mask', torch.tensor([1., 0., 1., 0.]), persistent=False)"
                ),
                *calls(2, mat),
                execg("del net.mask"),
                *calls(2, mat),
            ],
        ),
        backend,
    )


BATCHNORM = """
import torch

net = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))
"""


@backends()
def test_batchnorm_momentum_and_tracking_changed(backend):
    def batch(env):
        return torch.randn(6, 4)

    run_case(
        Case(
            "batchnorm_momentum_and_tracking_changed",
            prog(BATCHNORM, "net"),
            [
                *calls(2, batch),
                execg("net[1].momentum = None"),
                *calls(3, batch),
                execg("net[1].momentum = 0.5"),
                *calls(2, batch),
                execg("net.eval()"),
                *calls(2, batch),
                execg("net[1].track_running_stats = False"),
                *calls(2, batch),
            ],
        ),
        backend,
    )


# ---------------------------------------------------------------------------
# Argument kinds


VARARGS = """
import torch

def f(*xs, **weights):
    total = 0
    for i, x in enumerate(xs):
        total = total + x * (i + 1)
    for k, w in weights.items():
        total = total * w
    return total, len(xs), list(weights)
"""


@backends()
def test_varargs_and_kwargs_change(backend):
    def args(n):
        return lambda env: tuple(torch.randn(3) for _ in range(n))

    run_case(
        Case(
            "varargs_and_kwargs_change",
            prog(VARARGS),
            [
                Call(args(2), {"a": 2.0}),
                Call(args(2), {"a": 2.0}),
                Call(args(3), {"a": 2.0}, label="3 args"),
                Call(args(3), {"a": 2.0, "b": 0.5}, label="+b"),
                Call(args(3), {"b": 0.5, "a": 2.0}, label="b, a order"),
                Call(args(3), {"a": 2.0, "c": 0.5}, label="c for b"),
                Call(args(1), {}, label="1 arg no kwargs"),
            ],
        ),
        backend,
    )


POS_OR_KW = """
import torch

def f(x, scale=1.0, shift=0.0):
    return x * scale + shift
"""


@backends()
def test_positional_vs_keyword(backend):
    x = torch.arange(4.0)
    run_case(
        Case(
            "positional_vs_keyword",
            prog(POS_OR_KW),
            [
                Call((x, 2.0)),
                Call((x, 2.0)),
                Call((x,), {"scale": 2.0}),
                Call((x,), {"shift": 2.0}),
                Call((x, 2.0, 3.0)),
                Call((x,), {"shift": 3.0, "scale": 2.0}),
                Call((x, 3.0), {"shift": 2.0}),
            ],
        ),
        backend,
    )


BOOL_VS_INT = """
import torch

def f(x, flag):
    if flag is True:
        kind = "bool"
    elif isinstance(flag, bool):
        kind = "false"
    else:
        kind = "int"
    return x * flag, kind, flag, type(flag).__name__
"""


@backends()
def test_true_vs_one(backend):
    x = torch.arange(4.0)
    run_case(
        Case(
            "true_vs_one",
            prog(BOOL_VS_INT),
            [
                Call((x, 1)),
                Call((x, 1)),
                Call((x, True)),
                Call((x, True)),
                Call((x, 1)),
                Call((x, 0)),
                Call((x, False)),
                Call((x, 0)),
            ],
        ),
        backend,
    )


BOOL_TENSOR_DTYPE = """
import torch

def f(flags, v):
    # bool * int tensor keeps the int dtype; bool * bool is bool
    return torch.tensor([v, v]) * flags
"""


@backends()
def test_true_vs_one_makes_tensor_dtype(backend):
    flags = torch.tensor([True, False])
    run_case(
        Case(
            "true_vs_one_makes_tensor_dtype",
            prog(BOOL_TENSOR_DTYPE),
            [
                Call((flags, 1)),
                Call((flags, 1)),
                Call((flags, True)),
                Call((flags, 1.0)),
                Call((flags, True)),
                Call((flags, 1)),
            ],
        ),
        backend,
    )


INT_VS_FLOAT = """
import torch

def f(idx, s):
    return idx * s, s / 2, str(s)
"""


@backends()
def test_int_vs_float_of_equal_value(backend):
    idx = torch.arange(4)
    run_case(
        Case(
            "int_vs_float_of_equal_value",
            prog(INT_VS_FLOAT),
            [
                Call((idx, 2)),
                Call((idx, 2)),
                Call((idx, 2.0)),
                Call((idx, 2.0)),
                Call((idx, 2)),
                Call((idx, 3)),
                Call((idx, 3.0)),
            ],
        ),
        backend,
    )


SIGNED_ZERO = """
import math
import torch

def f(x, s):
    return x * math.copysign(1.0, s), 1.0 / (s + 0.0 if s else math.copysign(1e-300, s)), repr(s)
"""


@backends()
def test_zero_vs_negative_zero(backend):
    x = torch.arange(4.0)
    run_case(
        Case(
            "zero_vs_negative_zero",
            prog(SIGNED_ZERO),
            [
                Call((x, 0.0)),
                Call((x, 0.0)),
                Call((x, -0.0)),
                Call((x, -0.0)),
                Call((x, 0.0)),
            ],
        ),
        backend,
    )


NEG_ZERO_TENSOR = """
import torch

def f(x, s):
    # 1 / (x * s): +inf or -inf depending on the sign of zero
    return 1.0 / (x * s)
"""


@backends()
def test_negative_zero_into_tensor(backend):
    x = torch.zeros(3)
    run_case(
        Case(
            "negative_zero_into_tensor",
            prog(NEG_ZERO_TENSOR),
            [
                Call((x, 1.0)),
                Call((x, 2.0)),
                Call((x, 0.0)),
                Call((x, -0.0)),
                Call((x, -1.0)),
                Call((x, -0.0)),
            ],
            watch=lambda env: {},
        ),
        backend,
    )


NAN_ARG = """
import math
import torch

def f(x, s):
    if math.isnan(s):
        return x * 0, "nan"
    if s != s:
        return x, "never"
    return x * s, "num"
"""


@backends()
def test_nan_argument(backend):
    x = torch.arange(4.0)
    nan = float("nan")
    run_case(
        Case(
            "nan_argument",
            prog(NAN_ARG),
            [
                Call((x, nan)),
                Call((x, nan)),
                Call((x, 1.0)),
                Call((x, 1.0)),
                Call((x, nan)),
                Call((x, float("inf"))),
                Call((x, nan)),
            ],
        ),
        backend,
    )


BIG_INT = """
import torch

def f(x, n):
    return x + (n % 1000), n // 7, n * 3
"""


@backends()
def test_big_python_ints(backend):
    x = torch.zeros(2, dtype=torch.int64)
    run_case(
        Case(
            "big_python_ints",
            prog(BIG_INT),
            [
                Call((x, 2**70 + 1)),
                Call((x, 2**70 + 1)),
                Call((x, 2**70 + 2)),
                Call((x, 2**70 + 3)),
                Call((x, 2**63 - 1)),
                Call((x, 2**63)),
                Call((x, -(2**64))),
            ],
        ),
        backend,
    )


TUPLE_VS_LIST = """
import torch

def f(x, dims):
    if isinstance(dims, list):
        return x.permute(*dims) * 2, type(dims).__name__
    return x.permute(*dims), type(dims).__name__
"""


@backends()
def test_tuple_vs_list_argument(backend):
    run_case(
        Case(
            "tuple_vs_list_argument",
            prog(TUPLE_VS_LIST),
            [
                Call(lambda env: (torch.randn(2, 3), (1, 0))),
                Call(lambda env: (torch.randn(2, 3), (1, 0))),
                Call(lambda env: (torch.randn(2, 3), [1, 0])),
                Call(lambda env: (torch.randn(2, 3), [1, 0])),
                Call(lambda env: (torch.randn(2, 3), (1, 0))),
            ],
        ),
        backend,
    )


SIZE_VS_TUPLE = """
import torch

def f(x, shape):
    y = x.reshape(shape)
    return y, isinstance(shape, torch.Size), shape
"""


@backends()
def test_torch_size_vs_tuple_argument(backend):
    run_case(
        Case(
            "torch_size_vs_tuple_argument",
            prog(SIZE_VS_TUPLE),
            [
                Call(lambda env: (torch.randn(6), (2, 3))),
                Call(lambda env: (torch.randn(6), (2, 3))),
                Call(lambda env: (torch.randn(6), torch.Size([2, 3]))),
                Call(lambda env: (torch.randn(6), torch.Size([2, 3]))),
                Call(lambda env: (torch.randn(6), [2, 3])),
                Call(lambda env: (torch.randn(6), (2, 3))),
            ],
        ),
        backend,
    )


OPTIONAL_MASK = """
import torch

def f(x, mask=None):
    if mask is None:
        return x.softmax(-1)
    return x.masked_fill(~mask, float("-inf")).softmax(-1)
"""


@backends()
def test_none_vs_tensor_argument(backend):
    mask = torch.tensor([[True, False, True, True]] * 2)
    run_case(
        Case(
            "none_vs_tensor_argument",
            prog(OPTIONAL_MASK),
            [
                *calls(2, mat),
                Call(lambda env: (torch.randn(2, 4), mask)),
                Call(lambda env: (torch.randn(2, 4), mask)),
                Call(lambda env: (torch.randn(2, 4), None)),
                Call(lambda env: (torch.randn(2, 4),), {"mask": None}),
                Call(lambda env: (torch.randn(2, 4),), lambda env: {"mask": mask}),
            ],
        ),
        backend,
    )


LAYOUTS = """
import torch

def f(x):
    y = x.flatten(1)
    return y * 2, y.is_contiguous(), x.sum(0)
"""


@backends()
def test_channels_last_expanded_transposed_inputs(backend):
    def plain(env):
        return torch.randn(2, 3, 2, 2)

    def channels_last(env):
        return torch.randn(2, 3, 2, 2).to(memory_format=torch.channels_last)

    def expanded(env):
        return torch.randn(1, 3, 2, 2).expand(2, 3, 2, 2)

    def transposed(env):
        return torch.randn(2, 2, 3, 2).transpose(1, 2)

    run_case(
        Case(
            "channels_last_expanded_transposed_inputs",
            prog(LAYOUTS),
            [
                *calls(2, plain),
                *calls(2, channels_last),
                *calls(2, expanded),
                *calls(2, transposed),
                Call(plain),
            ],
        ),
        backend,
    )


INPLACE_ON_VIEW_ARG = """
import torch

def f(x):
    x.mul_(2)
    return x.sum()
"""


@backends()
def test_inplace_on_channels_last_and_transposed(backend):
    def channels_last(env):
        return torch.randn(2, 3, 2, 2).to(memory_format=torch.channels_last)

    def plain(env):
        return torch.randn(2, 3, 2, 2)

    def transposed(env):
        return torch.randn(2, 2, 3, 2).transpose(1, 2)

    run_case(
        Case(
            "inplace_on_channels_last_and_transposed",
            prog(INPLACE_ON_VIEW_ARG),
            [*calls(2, plain), *calls(2, channels_last), *calls(2, transposed), Call(plain)],
        ),
        backend,
    )


ZERO_DIM = """
import torch

def f(x, y):
    return x + y, (x + y).dim(), (x * y).shape
"""


@backends()
def test_zero_dim_vs_one_element(backend):
    run_case(
        Case(
            "zero_dim_vs_one_element",
            prog(ZERO_DIM),
            [
                Call(lambda env: (torch.randn(3), torch.tensor(2.0))),
                Call(lambda env: (torch.randn(3), torch.tensor(2.0))),
                Call(lambda env: (torch.randn(3), torch.tensor([2.0]))),
                Call(lambda env: (torch.randn(3), torch.tensor([2.0]))),
                Call(lambda env: (torch.randn(3), torch.tensor(2))),
                Call(lambda env: (torch.randn(3).half(), torch.tensor(2.0))),
                Call(lambda env: (torch.randn(3).half(), torch.tensor([2.0]))),
            ],
        ),
        backend,
    )


REQUIRES_GRAD_ARG = """
import torch

w = torch.ones(3)

def f(x):
    y = x * w
    if x.requires_grad:
        return y.sum(), "grad"
    return y.sum(), "no grad"
"""


@backends()
def test_requires_grad_of_argument_changes(backend):
    run_case(
        Case(
            "requires_grad_of_argument_changes",
            prog(REQUIRES_GRAD_ARG),
            [
                Call(lambda env: torch.randn(3)),
                Call(lambda env: torch.randn(3)),
                Call(lambda env: torch.randn(3).requires_grad_()),
                Call(lambda env: torch.randn(3).requires_grad_()),
                Call(lambda env: torch.randn(3)),
            ],
        ),
        backend,
    )


class Tagged(torch.Tensor):
    """Shared by both twins (torch.equal cannot compare two distinct subclasses)."""


SUBCLASS = """
import torch

def f(x):
    y = x * 2 + 1
    return y, type(y).__name__, type(x).__name__
"""


@backends()
def test_tensor_subclass_and_parameter_arguments(backend):
    run_case(
        Case(
            "tensor_subclass_and_parameter_arguments",
            prog(SUBCLASS),
            [
                *calls(2, vec),
                Call(lambda env: torch.randn(4).as_subclass(Tagged), label="Tagged"),
                Call(lambda env: torch.randn(4).as_subclass(Tagged), label="Tagged"),
                Call(lambda env: torch.nn.Parameter(torch.randn(4)), label="Parameter"),
                Call(lambda env: torch.nn.Parameter(torch.randn(4)), label="Parameter"),
                Call(vec),
            ],
        ),
        backend,
    )


TENSOR_ATTRIBUTE_READ = """
import torch

def f(x):
    return x * getattr(x, "scale", 1.0)
"""


@backends()
def test_attribute_set_on_input_tensor(backend):
    def tagged(value):
        def make(env):
            t = torch.randn(4)
            t.scale = value
            return t

        make.__name__ = f"x.scale = {value}"
        return make

    run_case(
        Case(
            "attribute_set_on_input_tensor",
            prog(TENSOR_ATTRIBUTE_READ),
            [
                *calls(2, vec),
                Call(tagged(3.0)),
                Call(tagged(3.0)),
                Call(tagged(-2.0)),
                Call(vec),
            ],
        ),
        backend,
    )


# ---------------------------------------------------------------------------
# Global state


INNER_DEFAULT_DTYPE = """
import torch

def f(x):
    torch.set_default_dtype(torch.float64)
    try:
        z = torch.zeros(4) + x
        r = torch.arange(3) * 0.5
    finally:
        torch.set_default_dtype(torch.float32)
    return z, r, torch.tensor(1.5)
"""


@backends()
def test_default_dtype_set_inside(backend):
    run_case(Case("default_dtype_set_inside", prog(INNER_DEFAULT_DTYPE), calls(3, vec)), backend)


BACKEND_FLAGS = """
import torch

def f(x):
    if torch.backends.mkldnn.enabled:
        x = x * 2
    if torch.backends.cudnn.benchmark:
        x = x + 1
    return x
"""


@backends()
def test_backend_flags_toggled(backend):
    def restore(env):
        torch.backends.mkldnn.enabled = True
        torch.backends.cudnn.benchmark = False

    try:
        run_case(
            Case(
                "backend_flags_toggled",
                prog(BACKEND_FLAGS),
                [
                    *calls(2, vec),
                    Do(lambda env: setattr(torch.backends.cudnn, "benchmark", True), "benchmark"),
                    *calls(2, vec),
                    Do(lambda env: setattr(torch.backends.mkldnn, "enabled", False), "no mkldnn"),
                    *calls(2, vec),
                    Do(restore, "restore"),
                    Call(vec),
                ],
            ),
            backend,
        )
    finally:
        restore(None)


GRAD_FLAG_INSIDE = """
import torch

lin = torch.nn.Linear(4, 2)

def f(x, train):
    with torch.set_grad_enabled(train):
        y = lin(x)
    return y, y.requires_grad
"""


@backends()
def test_set_grad_enabled_from_argument(backend):
    run_case(
        Case(
            "set_grad_enabled_from_argument",
            prog(GRAD_FLAG_INSIDE),
            [
                Call(lambda env: (torch.randn(2, 4), True)),
                Call(lambda env: (torch.randn(2, 4), True)),
                Call(lambda env: (torch.randn(2, 4), False)),
                Call(lambda env: (torch.randn(2, 4), False)),
                Call(lambda env: (torch.randn(2, 4), 1)),
                Call(lambda env: (torch.randn(2, 4), 0)),
            ],
        ),
        backend,
    )


INFERENCE_MODE_AROUND = """
import torch

lin = torch.nn.Linear(4, 2)

def f(x):
    y = lin(x)
    return y, y.requires_grad, torch.is_inference_mode_enabled()
"""


@backends()
def test_inference_mode_around_call(backend):
    run_case(
        Case(
            "inference_mode_around_call",
            prog(INFERENCE_MODE_AROUND),
            [
                *calls(2, mat),
                *calls(2, mat, context=lambda env: torch.inference_mode()),
                *calls(2, mat, context=lambda env: torch.no_grad()),
                *calls(2, mat),
            ],
        ),
        backend,
    )


INFERENCE_MODE_INSIDE = """
import torch

lin = torch.nn.Linear(4, 2)
cache = {}

def f(x):
    with torch.inference_mode():
        y = lin(x)
    cache["last"] = y
    return y * 2, y.is_inference()
"""


@backends()
def test_inference_mode_inside(backend):
    run_case(Case("inference_mode_inside", prog(INFERENCE_MODE_INSIDE), calls(3, mat)), backend)


NUMPY_RANDOM = """
import random
import numpy as np
import torch

def f(x):
    noise = torch.from_numpy(np.random.randn(4).astype("float32"))
    pick = random.choice([0.5, 1.0, 2.0, 4.0])
    return x * pick + noise
"""


@backends()
def test_numpy_and_python_random_inside(backend):
    run_case(
        Case(
            "numpy_and_python_random_inside",
            prog(NUMPY_RANDOM),
            [
                *calls(3, vec),
                Do(lambda env: __import__("random").seed(99), "reseed random"),
                *calls(2, vec),
            ],
        ),
        backend,
    )


ENVIRON = """
import os
import torch

def f(x):
    if "FG16_MODE" in os.environ:
        x = x * 2
    if os.getenv("FG16_SHIFT"):
        x = x + float(os.environ["FG16_SHIFT"])
    return x
"""


@backends()
def test_environ_membership_and_getenv(backend):
    import os

    def clean(env=None):
        os.environ.pop("FG16_MODE", None)
        os.environ.pop("FG16_SHIFT", None)

    clean()
    try:
        run_case(
            Case(
                "environ_membership_and_getenv",
                prog(ENVIRON),
                [
                    *calls(2, vec),
                    Do(lambda env: os.environ.__setitem__("FG16_MODE", "1"), "FG16_MODE=1"),
                    *calls(2, vec),
                    Do(lambda env: os.environ.__setitem__("FG16_SHIFT", "3"), "FG16_SHIFT=3"),
                    *calls(2, vec),
                    Do(lambda env: os.environ.__setitem__("FG16_SHIFT", "5"), "FG16_SHIFT=5"),
                    Call(vec),
                    Do(clean, "clean"),
                    Call(vec),
                ],
            ),
            backend,
        )
    finally:
        clean()


SYS_ARGV = """
import sys
import torch

def f(x):
    if "--double" in sys.argv:
        return x * 2
    return x
"""


@backends()
def test_sys_argv_read(backend):
    import sys

    saved = list(sys.argv)

    def add(env):
        if "--double" not in sys.argv:
            sys.argv.append("--double")

    try:
        run_case(
            Case(
                "sys_argv_read",
                prog(SYS_ARGV),
                [*calls(2, vec), Do(add, "argv += --double"), *calls(2, vec)],
            ),
            backend,
        )
    finally:
        sys.argv[:] = saved


GLOBAL_REBOUND = """
import torch

WEIGHTS = [1.0, 2.0]
TABLE = torch.ones(4)

def f(x):
    total = x * 0
    for w in WEIGHTS:
        total = total + x * w
    return total + TABLE
"""


@backends()
def test_global_rebound_vs_mutated(backend):
    run_case(
        Case(
            "global_rebound_vs_mutated",
            prog(GLOBAL_REBOUND),
            [
                *calls(2, vec),
                execg("WEIGHTS[0] = 5.0"),
                *calls(2, vec),
                setg("WEIGHTS", "[1.0, 2.0, 3.0]"),
                *calls(2, vec),
                execg("TABLE.add_(1)"),
                Call(vec),
                setg("TABLE", "torch.zeros(4)"),
                Call(vec),
                setg("WEIGHTS", "(1.0, 2.0)"),
                Call(vec),
            ],
        ),
        backend,
    )


# ---------------------------------------------------------------------------
# Control flow


SHAPE_LOOP = """
import torch

def f(x):
    total = torch.zeros(x.shape[1:])
    for i in range(x.shape[0]):
        total = total + x[i] * (i + 1)
    return total, x.shape[0] // 2
"""


@backends()
def test_loop_trip_count_from_shape(backend):
    def rows(n):
        return lambda env: torch.randn(n, 3)

    run_case(
        Case(
            "loop_trip_count_from_shape",
            prog(SHAPE_LOOP),
            [Call(rows(n), label=f"{n} rows") for n in (3, 3, 4, 5, 6, 3, 7)],
        ),
        backend,
    )


HALF_SPLIT = """
import torch

def f(x):
    n = x.shape[0] // 2
    first, second = x[:n], x[n:]
    if x.shape[0] % 2:
        return first.sum(0) - second.sum(0), "odd"
    return first.sum(0) + second.sum(0), "even"
"""


@backends()
def test_shape_arithmetic_parity(backend):
    run_case(
        Case(
            "shape_arithmetic_parity",
            prog(HALF_SPLIT),
            [
                Call(lambda env, n=n: torch.randn(n, 2), label=f"{n}")
                for n in (4, 4, 6, 8, 5, 7, 10, 9)
            ],
        ),
        backend,
    )


TRY_FINALLY_LOOP = """
import torch

LIMIT = 2
log = []

def f(xs):
    total = 0
    for i, x in enumerate(xs):
        try:
            if i >= LIMIT:
                break
            if i == 0:
                continue
            total = total + x
        finally:
            log.append(i)
    return total
"""


@backends()
def test_try_finally_with_break_continue(backend):
    def xs(env):
        return [torch.randn(2) for _ in range(4)]

    run_case(
        Case(
            "try_finally_with_break_continue",
            prog(TRY_FINALLY_LOOP),
            [*calls(2, xs), setg("LIMIT", "3"), *calls(2, xs), setg("LIMIT", "10"), Call(xs)],
        ),
        backend,
    )


GENERATORS = """
import torch

SCALES = [1.0, 2.0]

def scales():
    yield 0.5
    yield from SCALES

def f(x):
    return sum(x * s for s in scales()), [s for s in scales() if s > 1]
"""


@backends()
def test_generators_and_yield_from(backend):
    run_case(
        Case(
            "generators_and_yield_from",
            prog(GENERATORS),
            [
                *calls(2, vec),
                execg("SCALES.append(3.0)"),
                *calls(2, vec),
                execg("SCALES[0] = 7.0"),
                Call(vec),
                setg("SCALES", "(4.0,)"),
                Call(vec),
            ],
        ),
        backend,
    )


COMPREHENSION = """
import torch

FACTORS = {"a": 1.0, "b": 2.0}

def f(x):
    parts = {k: x * v for k, v in sorted(FACTORS.items())}
    best = max(FACTORS, key=FACTORS.get)
    return parts, best
"""


@backends()
def test_sorted_and_max_over_mutated_dict(backend):
    run_case(
        Case(
            "sorted_and_max_over_mutated_dict",
            prog(COMPREHENSION),
            [
                *calls(2, vec),
                execg("FACTORS['c'] = 0.5"),
                *calls(2, vec),
                execg("FACTORS['a'] = 9.0"),
                *calls(2, vec),
                execg("del FACTORS['b']"),
                Call(vec),
            ],
        ),
        backend,
    )


DICT_ORDER = """
import torch

WEIGHTS = {"a": 1.0, "b": 2.0, "c": 3.0}

def f(x):
    out = x
    for w in WEIGHTS.values():
        out = out * w + 1
    return out, list(WEIGHTS)
"""


@backends()
def test_dict_order_after_delete_and_reinsert(backend):
    run_case(
        Case(
            "dict_order_after_delete_and_reinsert",
            prog(DICT_ORDER),
            [
                *calls(2, vec),
                execg("del WEIGHTS['a']; WEIGHTS['a'] = 1.0"),  # same contents, other order
                *calls(2, vec),
                execg("WEIGHTS = dict(reversed(list(WEIGHTS.items())))"),
                *calls(2, vec),
            ],
        ),
        backend,
    )


DICT_ORDER_MODULE = """
import torch

class Heads(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scales = {"a": 1.0, "b": 2.0, "c": 3.0}
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        h = self.lin(x)
        outs = []
        for name, s in self.scales.items():
            h = torch.tanh(h * s)
            outs.append(h)
        return torch.stack(outs)

net = Heads()
"""


@backends()
def test_attribute_dict_reordered(backend):
    run_case(
        Case(
            "attribute_dict_reordered",
            prog(DICT_ORDER_MODULE, "net"),
            [
                *calls(2, mat),
                execg("net.scales = {'c': 3.0, 'b': 2.0, 'a': 1.0}"),
                *calls(2, mat),
                execg("s = net.scales.pop('b'); net.scales['b'] = s"),
                *calls(2, mat),
            ],
        ),
        backend,
    )


SET_ORDER = """
import torch

KEYS = {1, 9}

def f(x):
    out = x
    for k in KEYS:
        out = out * 2 + k
    return out, list(KEYS)
"""


@backends()
def test_set_iteration_order_same_contents(backend):
    run_case(
        Case(
            "set_iteration_order_same_contents",
            prog(SET_ORDER),
            [
                *calls(2, vec),
                setg("KEYS", "{9, 1}"),  # same set, other iteration order
                *calls(2, vec),
                execg("KEYS.discard(1); KEYS.add(1)"),
                *calls(2, vec),
                execg("KEYS.add(17)"),
                Call(vec),
            ],
        ),
        backend,
    )


SET_ORDER_ARG = """
import torch

def f(x, keys):
    out = x
    for k in keys:
        out = out * 2 + k
    return out
"""


@backends()
def test_set_argument_iteration_order(backend):
    run_case(
        Case(
            "set_argument_iteration_order",
            prog(SET_ORDER_ARG),
            [
                Call(lambda env: (torch.zeros(2), {1, 9})),
                Call(lambda env: (torch.zeros(2), {1, 9})),
                Call(lambda env: (torch.zeros(2), {9, 1})),
                Call(lambda env: (torch.zeros(2), {9, 1})),
                Call(lambda env: (torch.zeros(2), frozenset({1, 9}))),
                Call(lambda env: (torch.zeros(2), frozenset({9, 1}))),
            ],
        ),
        backend,
    )


DICT_ARG_ORDER = """
import torch

def f(x, weights):
    out = x
    for k, w in weights.items():
        out = out * w + len(k)
    return out
"""


@backends()
def test_dict_argument_key_order(backend):
    run_case(
        Case(
            "dict_argument_key_order",
            prog(DICT_ARG_ORDER),
            [
                Call(lambda env: (torch.ones(2), {"a": 2.0, "bb": 3.0})),
                Call(lambda env: (torch.ones(2), {"a": 2.0, "bb": 3.0})),
                Call(lambda env: (torch.ones(2), {"bb": 3.0, "a": 2.0})),
                Call(lambda env: (torch.ones(2), {"bb": 3.0, "a": 2.0})),
                Call(lambda env: (torch.ones(2), {"a": 2.0, "bb": 3.0})),
            ],
        ),
        backend,
    )


EARLY_RETURN = """
import torch

def f(xs, threshold):
    for i, x in enumerate(xs):
        if i >= threshold:
            return x, i
    return xs[-1] * 0, -1
"""


@backends()
def test_early_return_depends_on_argument(backend):
    def xs(n, t):
        return lambda env: ([torch.randn(2) for _ in range(n)], t)

    run_case(
        Case(
            "early_return_depends_on_argument",
            prog(EARLY_RETURN),
            [
                Call(xs(3, 1)),
                Call(xs(3, 1)),
                Call(xs(3, 2)),
                Call(xs(3, 5)),
                Call(xs(5, 4)),
                Call(xs(3, 1)),
            ],
        ),
        backend,
    )


# ---------------------------------------------------------------------------
# Tensor semantics


TOLIST_LOOP = """
import torch

table = torch.arange(10.0)

def f(idx):
    total = 0.0
    for i in idx.tolist():
        total = total + table[i]
    return total, len(idx.tolist())
"""


@backends()
def test_tolist_drives_loop(backend):
    run_case(
        Case(
            "tolist_drives_loop",
            prog(TOLIST_LOOP),
            [
                Call((torch.tensor([1, 2]),)),
                Call((torch.tensor([1, 2]),)),
                Call((torch.tensor([3, 4]),)),
                Call((torch.tensor([3, 3]),)),
                Call((torch.tensor([5, 6]),)),
                Call((torch.tensor([0, 9]),)),
            ],
        ),
        backend,
    )


BOOL_OF_TENSOR = """
import torch

def f(x):
    if (x > 0).all():
        return x.log()
    if bool(x.sum() > 0):
        return x.relu()
    return -x
"""


@backends()
def test_bool_of_tensor_drives_branches(backend):
    run_case(
        Case(
            "bool_of_tensor_drives_branches",
            prog(BOOL_OF_TENSOR),
            [
                Call((torch.tensor([1.0, 2.0]),)),
                Call((torch.tensor([1.0, 3.0]),)),
                Call((torch.tensor([-1.0, 3.0]),)),
                Call((torch.tensor([-1.0, 4.0]),)),
                Call((torch.tensor([-5.0, 1.0]),)),
                Call((torch.tensor([2.0, 2.0]),)),
                Call((torch.tensor([-1.0, 5.0]),)),
            ],
        ),
        backend,
    )


APPEND_TO_ARG = """
import torch

def f(x, acc):
    acc.append(x * 2)
    if len(acc) > 2:
        acc.pop(0)
    return torch.stack(acc).sum(0)
"""


@backends()
def test_list_argument_appended_in_place(backend):
    def build():
        env = prog(APPEND_TO_ARG)()
        env.acc = []
        return env

    run_case(
        Case(
            "list_argument_appended_in_place",
            build,
            calls(5, lambda env: (torch.randn(3), env.acc)),
        ),
        backend,
    )


OUT_ARG = """
import torch

def f(x, out):
    torch.add(x, 1, out=out)
    return out
"""


@backends()
def test_out_argument_of_other_shapes(backend):
    run_case(
        Case(
            "out_argument_of_other_shapes",
            prog(OUT_ARG),
            [
                Call(lambda env: (torch.randn(3), torch.empty(3))),
                Call(lambda env: (torch.randn(3), torch.empty(3))),
                Call(lambda env: (torch.randn(3), torch.empty(0))),
                Call(lambda env: (torch.randn(3), torch.empty(0))),
                Call(lambda env: (torch.randn(3), torch.empty(3, dtype=torch.float64))),
                Call(lambda env: (torch.randn(3), torch.empty(3))),
            ],
            compare_warnings=True,
        ),
        backend,
    )


INPLACE_VIEW_OF_INPUT = """
import torch

def f(x):
    head = x[0]
    head.mul_(10)
    x.t()[1].add_(1)
    return x.sum(), head
"""


@backends()
def test_inplace_on_views_of_input(backend):
    run_case(
        Case(
            "inplace_on_views_of_input",
            prog(INPLACE_VIEW_OF_INPUT),
            [
                *calls(2, lambda env: torch.randn(3, 3)),
                Call(lambda env: torch.randn(3, 3).t()),
                Call(lambda env: torch.randn(3, 3).t()),
                Call(lambda env: torch.randn(4, 3)[1:]),
                Call(lambda env: torch.randn(4, 3)[1:]),
            ],
        ),
        backend,
    )


RETURNS_VIEW = """
import torch

def f(x):
    return x[1:], x.view(-1), x.detach(), x
"""


@backends()
def test_returns_views_of_input(backend):
    run_case(
        Case("returns_views_of_input", prog(RETURNS_VIEW), calls(3, lambda env: torch.randn(3, 2))),
        backend,
    )


DATA_AND_DETACH = """
import torch

w = torch.nn.Parameter(torch.ones(3))

def f(x):
    w.data.add_(x)
    return (w * 2).sum(), w.detach().clone()
"""


@backends()
def test_parameter_data_updated_inside(backend):
    run_case(
        Case(
            "parameter_data_updated_inside",
            prog(DATA_AND_DETACH),
            calls(4, lambda env: torch.randn(3)),
            watch=lambda env: {"w": env.ns.w},
        ),
        backend,
    )


SETTING_TENSOR_ATTR = """
import torch

def f(x):
    y = x * 2
    y.tag = "doubled"
    x.seen = getattr(x, "seen", 0) + 1
    return y, y.tag, x.seen
"""


@backends()
def test_attributes_set_on_tensors_inside(backend):
    run_case(
        Case(
            "attributes_set_on_tensors_inside",
            prog(SETTING_TENSOR_ATTR),
            [Call((torch.ones(2),)), Call((torch.ones(2),)), Call((torch.ones(2),))],
        ),
        backend,
    )


def test_attribute_set_on_returned_tensor_is_there_on_replay():
    """The harness does not compare tensor attributes: check them directly.

    F41: a replay's tensors are graph outputs, which would not carry the attribute;
    the record is refused (the function runs eagerly) and the report says why."""
    import fullgraph.runtime as fr

    def f(x):
        y = x * 2
        y.tag = "doubled"
        return y

    compiled = fr.compile(f, backend="eager")
    results = [compiled(torch.ones(2)) for _ in range(3)]
    assert [getattr(r, "tag", None) for r in results] == ["doubled"] * 3
    assert "attribute 'tag' set on a tensor the function made" in compiled.stats.fallback_reason


def test_same_tensor_returned_twice_stays_one_object():
    """``return y, y``: the caller gets one tensor twice (an in-place update of one is seen
    through the other)."""
    import fullgraph.runtime as fr

    def f(x):
        y = x + 1
        return y, y

    compiled = fr.compile(f, backend="eager")
    for _ in range(3):
        a, b = compiled(torch.ones(2))
        assert a is b
    assert compiled.stats.hits >= 1


def test_returned_view_of_output_stays_a_view():
    """``return y, y[0]``: the second output is a view of the first."""
    import fullgraph.runtime as fr

    def f(x):
        y = x * 3
        return y, y[0]

    compiled = fr.compile(f, backend="eager")
    for _ in range(3):
        y, head = compiled(torch.ones(2, 2))
        y.add_(1)
        assert torch.equal(head, torch.full((2,), 4.0)), head
    assert compiled.stats.hits >= 1


INFERENCE_MODE_STORED = """
import torch

lin = torch.nn.Linear(4, 2)
cache = {}

def f(x):
    with torch.inference_mode():
        y = lin(x)
    cache["last"] = y
    return y * 2
"""


@backends()
def test_inference_mode_tensor_stored(backend):
    def watch(env):
        last = env.ns.cache.get("last")
        return {"is_inference": None if last is None else last.is_inference()}

    run_case(
        Case(
            "inference_mode_tensor_stored", prog(INFERENCE_MODE_STORED), calls(3, mat), watch=watch
        ),
        backend,
    )


# ---------------------------------------------------------------------------
# Python numbers that become sizes, indices and dims


INT_AS_SIZE = """
import torch

def f(x, n):
    a = x.repeat(n)
    b = torch.ones(n) * x.sum()
    c = x[:n]
    d = x.view(n, -1) if x.numel() % n == 0 else None
    return a, b, c, d, torch.arange(n).sum()
"""


@backends()
def test_int_argument_used_as_size(backend):
    run_case(
        Case(
            "int_argument_used_as_size",
            prog(INT_AS_SIZE),
            [
                Call(lambda env, n=n: (torch.randn(6), n), label=f"n={n}")
                for n in (2, 2, 3, 3, 1, 6, 4, 2)
            ],
        ),
        backend,
    )


INT_AS_INDEX = """
import torch

def f(x, i, d, k):
    return x[i], x.sum(dim=d), x.topk(k, dim=-1).values, torch.roll(x, shifts=i, dims=0), x.narrow(0, i, 1)
"""


@backends()
def test_int_arguments_as_index_dim_k(backend):
    def args(i, d, k):
        return lambda env: (torch.randn(3, 4), i, d, k)

    run_case(
        Case(
            "int_arguments_as_index_dim_k",
            prog(INT_AS_INDEX),
            [
                Call(args(0, 0, 1)),
                Call(args(0, 0, 1)),
                Call(args(1, 0, 1)),
                Call(args(2, 0, 1)),
                Call(args(2, 1, 1)),
                Call(args(2, 1, 2)),
                Call(args(1, 1, 3)),
                Call(args(-1, -1, 4)),
                Call(args(0, 0, 1)),
            ],
        ),
        backend,
    )


FLOAT_TO_SIZE = """
import math
import torch
import torch.nn.functional as F

def f(x, s):
    up = F.interpolate(x, scale_factor=s, mode="nearest")
    n = int(x.shape[-1] * s)
    return up, torch.zeros(n), math.floor(s * 10), round(s, 1), s > 1.5
"""


@backends()
def test_float_argument_becomes_size(backend):
    run_case(
        Case(
            "float_argument_becomes_size",
            prog(FLOAT_TO_SIZE),
            [
                Call(lambda env, s=s: (torch.randn(1, 1, 4), s), label=f"s={s}")
                for s in (2.0, 2.0, 1.5, 3.0, 1.25, 2.5, 1.0, 2.0)
            ],
        ),
        backend,
    )


FLOAT_BRANCH = """
import torch

def f(x, p):
    if p > 0.5:
        return x * p, "high"
    return x - p, "low"
"""


@backends()
def test_float_argument_drives_branch(backend):
    run_case(
        Case(
            "float_argument_drives_branch",
            prog(FLOAT_BRANCH),
            [
                Call(lambda env, p=p: (torch.randn(3), p), label=f"p={p}")
                for p in (0.1, 0.2, 0.3, 0.9, 0.4, 0.7, 0.5)
            ],
        ),
        backend,
    )


SPLIT_CHUNK = """
import torch

def f(x, sizes, n):
    parts = torch.split(x, sizes)
    chunks = x.chunk(n)
    return [p.sum() for p in parts], len(chunks), torch.cat([c * i for i, c in enumerate(chunks)])
"""


@backends()
def test_split_sizes_and_chunks_change(backend):
    def args(sizes, n):
        return lambda env: (torch.randn(6), list(sizes), n)

    run_case(
        Case(
            "split_sizes_and_chunks_change",
            prog(SPLIT_CHUNK),
            [
                Call(args([2, 4], 2)),
                Call(args([2, 4], 2)),
                Call(args([3, 3], 2)),
                Call(args([4, 2], 3)),
                Call(args([1, 2, 3], 3)),
                Call(args([1, 5], 4)),
                Call(args([2, 4], 2)),
            ],
        ),
        backend,
    )


LIST_TO_TENSOR = """
import torch

WEIGHTS = [1.0, 2.0, 3.0]

def f(x, idx):
    w = torch.tensor(WEIGHTS)
    return x[idx] * w[: len(idx)].sum(), torch.tensor(idx) + 1, torch.full((2,), WEIGHTS[0])
"""


@backends()
def test_python_lists_become_tensors(backend):
    run_case(
        Case(
            "python_lists_become_tensors",
            prog(LIST_TO_TENSOR),
            [
                Call(lambda env: (torch.randn(4), [0, 1])),
                Call(lambda env: (torch.randn(4), [0, 1])),
                Call(lambda env: (torch.randn(4), [2, 3])),
                Call(lambda env: (torch.randn(4), [3, 0])),
                execg("WEIGHTS[1] = 20.0"),
                Call(lambda env: (torch.randn(4), [3, 0])),
                execg("WEIGHTS[0] = -1.0"),
                Call(lambda env: (torch.randn(4), [3, 0])),
                Call(lambda env: (torch.randn(4), [1, 2, 3])),
            ],
        ),
        backend,
    )


NUMPY_ARGS = """
import numpy as np
import torch

TABLE = np.arange(4, dtype=np.float32)

def f(x, a):
    return x + torch.from_numpy(a), x * torch.as_tensor(TABLE), float(a.sum())
"""


@backends()
def test_numpy_arrays_argument_and_global(backend):
    import numpy as np

    run_case(
        Case(
            "numpy_arrays_argument_and_global",
            prog(NUMPY_ARGS),
            [
                Call(lambda env: (torch.randn(4), np.ones(4, dtype=np.float32))),
                Call(lambda env: (torch.randn(4), np.ones(4, dtype=np.float32))),
                Call(lambda env: (torch.randn(4), np.full(4, 3.0, dtype=np.float32))),
                Call(lambda env: (torch.randn(4), np.full(4, 5.0, dtype=np.float32))),
                execg("TABLE[0] = 100.0"),
                Call(lambda env: (torch.randn(4), np.full(4, 5.0, dtype=np.float32))),
                Call(lambda env: (torch.randn(4), np.full(4, 5.0, dtype=np.float64))),
            ],
        ),
        backend,
    )


PY_LIST_INDEX = """
import torch

def f(x, rows, mask):
    return x[rows], x[mask]
"""


@backends()
def test_list_index_and_bool_mask_arguments(backend):
    run_case(
        Case(
            "list_index_and_bool_mask_arguments",
            prog(PY_LIST_INDEX),
            [
                Call(lambda env: (torch.randn(3, 2), [0, 2], [True, False, True])),
                Call(lambda env: (torch.randn(3, 2), [0, 2], [True, False, True])),
                Call(lambda env: (torch.randn(3, 2), [1, 2], [True, True, True])),
                Call(lambda env: (torch.randn(3, 2), [2, 2], [False, False, True])),
                Call(lambda env: (torch.randn(3, 2), [1], [False, True, False])),
            ],
        ),
        backend,
    )


# ---------------------------------------------------------------------------
# Data-dependent shapes and Python numbers from tensors


DATA_SHAPES = """
import torch

def f(x):
    pos = x[x > 0]
    nz = torch.nonzero(x > 0.5)
    u = torch.unique(x.round())
    return pos, nz, u, pos.shape[0]
"""


@backends()
def test_data_dependent_shapes(backend):
    run_case(
        Case("data_dependent_shapes", prog(DATA_SHAPES), calls(6, lambda env: torch.randn(8))),
        backend,
    )


BINCOUNT = """
import torch

def f(labels):
    n = int(labels.max()) + 1
    counts = torch.zeros(n).index_add_(0, labels, torch.ones(labels.shape[0]))
    return counts, torch.bincount(labels), n
"""


@backends()
def test_size_from_max_item(backend):
    run_case(
        Case(
            "size_from_max_item",
            prog(BINCOUNT),
            [
                Call((torch.tensor([0, 1, 1]),)),
                Call((torch.tensor([0, 1, 0]),)),
                Call((torch.tensor([0, 3, 1]),)),
                Call((torch.tensor([2, 3, 1]),)),
                Call((torch.tensor([0, 0, 0]),)),
                Call((torch.tensor([5, 1, 1]),)),
            ],
        ),
        backend,
    )


ITEM_RANGE = """
import torch

def f(x, k):
    steps = int(k.item())
    for _ in range(steps):
        x = x * 0.5 + 1
    return x, steps, k.tolist()
"""


@backends()
def test_item_drives_range(backend):
    run_case(
        Case(
            "item_drives_range",
            prog(ITEM_RANGE),
            [
                Call(lambda env, k=k: (torch.ones(2), torch.tensor(k)), label=f"k={k}")
                for k in (2, 2, 3, 1, 4, 0, 2)
            ],
        ),
        backend,
    )


TOLIST_RETURN = """
import torch

def f(x):
    y = x * 2
    return y.tolist(), y.sum().item(), y.max().item() > 1, len(x), [float(v) for v in x]
"""


@backends()
def test_tolist_and_item_returned(backend):
    run_case(
        Case("tolist_and_item_returned", prog(TOLIST_RETURN), calls(4, lambda env: torch.randn(3))),
        backend,
    )


TENSOR_ITERATION = """
import torch

def f(x, y):
    out = []
    for i, (a, b) in enumerate(zip(x, y)):
        out.append(a * b + i)
    return torch.stack(out), [r.sum() for r in x]
"""


@backends()
def test_iteration_over_tensors(backend):
    def args(n, m):
        return lambda env: (torch.randn(n, 2), torch.randn(m, 2))

    run_case(
        Case(
            "iteration_over_tensors",
            prog(TENSOR_ITERATION),
            [
                Call(args(3, 3)),
                Call(args(3, 3)),
                Call(args(4, 4)),
                Call(args(4, 2)),
                Call(args(2, 4)),
                Call(args(5, 5)),
            ],
        ),
        backend,
    )


NUMPY_RETURN = """
import torch

def f(x):
    y = x + 1
    return y.numpy(), x.numpy()
"""


@backends()
def test_numpy_views_returned(backend):
    def check(env):
        pass

    run_case(
        Case("numpy_views_returned", prog(NUMPY_RETURN), calls(3, lambda env: torch.randn(3))),
        backend,
    )


def test_numpy_view_of_input_shares_memory_on_replay():
    """``x.numpy()`` shares the input's memory: a write through it is seen in ``x``."""
    import fullgraph.runtime as fr

    def f(x):
        return x.numpy(), (x + 1).numpy()

    compiled = fr.compile(f, backend="eager")
    for _ in range(3):
        x = torch.zeros(3)
        a, b = compiled(x)
        a[0] = 7.0
        assert x[0].item() == 7.0
        assert b.tolist() == [1.0, 1.0, 1.0]
    assert compiled.stats.hits >= 1


# ---------------------------------------------------------------------------
# Library modules with state of their own


EMBEDDING_MAX_NORM = """
import torch

emb = torch.nn.Embedding(5, 3, max_norm=1.0)
with torch.no_grad():
    emb.weight.mul_(3)

def f(idx):
    return emb(idx).sum(-1)
"""


@backends()
def test_embedding_max_norm_renormalizes_in_forward(backend):
    run_case(
        Case(
            "embedding_max_norm_renormalizes_in_forward",
            prog(EMBEDDING_MAX_NORM),
            [
                Call((torch.tensor([0, 1]),)),
                Call((torch.tensor([0, 1]),)),
                Call((torch.tensor([2, 3]),)),
                Call((torch.tensor([4, 0]),)),
                execg("emb.max_norm = 0.5"),
                Call((torch.tensor([4, 0]),)),
            ],
            watch=lambda env: {"weight": env.ns.emb.weight},
        ),
        backend,
    )


SPECTRAL_NORM = """
import torch

lin = torch.nn.utils.parametrizations.spectral_norm(torch.nn.Linear(4, 4))

def f(x):
    return lin(x)
"""


@backends()
def test_spectral_norm_power_iteration(backend):
    def watch(env):
        return {
            "u": env.ns.lin.parametrizations.weight[0]._u,
            "v": env.ns.lin.parametrizations.weight[0]._v,
            "training": env.ns.lin.training,
        }

    run_case(
        Case(
            "spectral_norm_power_iteration",
            prog(SPECTRAL_NORM),
            [
                *calls(3, mat),
                execg("lin.eval()"),
                *calls(2, mat),
                execg("lin.train()"),
                *calls(2, mat),
            ],
            watch=watch,
        ),
        backend,
    )


PARAMETRIZE = """
import torch
import torch.nn.utils.parametrize as P

class Symmetric(torch.nn.Module):
    def forward(self, w):
        return w.triu() + w.triu(1).transpose(-1, -2)

lin = torch.nn.Linear(3, 3)

def f(x):
    return lin(x)
"""


@backends()
def test_parametrization_registered_and_removed(backend):
    run_case(
        Case(
            "parametrization_registered_and_removed",
            prog(PARAMETRIZE),
            [
                *calls(2, lambda env: torch.randn(2, 3)),
                execg("P.register_parametrization(lin, 'weight', Symmetric())"),
                *calls(2, lambda env: torch.randn(2, 3)),
                execg("P.remove_parametrizations(lin, 'weight', leave_parametrized=False)"),
                *calls(2, lambda env: torch.randn(2, 3)),
            ],
        ),
        backend,
    )


MHA = """
import torch

mha = torch.nn.MultiheadAttention(4, 2, batch_first=True)

def f(x, need_weights):
    out, w = mha(x, x, x, need_weights=need_weights)
    return out, w
"""


@backends()
def test_multihead_attention_flags(backend):
    def args(flag):
        return lambda env: (torch.randn(2, 3, 4), flag)

    run_case(
        Case(
            "multihead_attention_flags",
            prog(MHA),
            [
                Call(args(True)),
                Call(args(True)),
                Call(args(False)),
                Call(args(False)),
                execg("mha.eval()"),
                Call(args(False)),
                Call(args(False)),
                Call(args(True)),
            ],
        ),
        backend,
    )


LSTM = """
import torch

lstm = torch.nn.LSTM(3, 4, batch_first=True)

def f(x, state=None):
    out, (h, c) = lstm(x, state)
    return out[:, -1], (h, c)
"""


@backends()
def test_lstm_with_and_without_state(backend):
    run_case(
        Case(
            "lstm_with_and_without_state",
            prog(LSTM),
            [
                *calls(2, lambda env: torch.randn(2, 5, 3)),
                Call(
                    lambda env: (torch.randn(2, 5, 3), (torch.zeros(1, 2, 4), torch.ones(1, 2, 4)))
                ),
                Call(
                    lambda env: (torch.randn(2, 5, 3), (torch.zeros(1, 2, 4), torch.ones(1, 2, 4)))
                ),
                Call(lambda env: torch.randn(2, 7, 3)),
                Call(lambda env: torch.randn(2, 5, 3)),
            ],
        ),
        backend,
    )


# ---------------------------------------------------------------------------
# Standard-library state


LOGGING = """
import logging
import torch

records = []

class ListHandler(logging.Handler):
    def emit(self, record):
        records.append(record.getMessage())

log = logging.getLogger("fg16." + __name__)
log.propagate = False
log.addHandler(ListHandler())
log.setLevel(logging.WARNING)

def f(x):
    log.info("norm %.3f", x.norm().item())
    log.warning("called with %d rows", x.shape[0])
    return x * 2
"""


@backends()
def test_logging_level_changed(backend):
    run_case(
        Case(
            "logging_level_changed",
            prog(LOGGING),
            [
                *calls(2, vec),
                execg("log.setLevel(logging.INFO)"),
                *calls(2, vec),
                execg("log.setLevel(logging.ERROR)"),
                *calls(2, vec),
                execg("log.setLevel(logging.DEBUG); log.disabled = True"),
                Call(vec),
            ],
        ),
        backend,
    )


ITER_STATE = """
import collections
import itertools
import torch

counter = itertools.count()
recent = collections.deque(maxlen=2)
hist = collections.defaultdict(list)

def f(x):
    step = next(counter)
    recent.append(step)
    hist[step % 2].append(step)
    return x * step, list(recent), len(hist[0])
"""


@backends()
def test_itertools_count_and_deque(backend):
    run_case(
        Case(
            "itertools_count_and_deque",
            prog(ITER_STATE),
            calls(5, vec),
            watch=lambda env: {"recent": list(env.ns.recent), "hist": dict(env.ns.hist)},
        ),
        backend,
    )


LRU = """
import functools
import torch

calls = []

@functools.lru_cache(maxsize=None)
def positions(n):
    calls.append(n)
    return torch.arange(n, dtype=torch.float32)

def f(x):
    return x + positions(x.shape[-1])
"""


@backends()
def test_lru_cached_helper(backend):
    run_case(
        Case(
            "lru_cached_helper",
            prog(LRU),
            [
                *calls(2, vec),
                Call(lambda env: torch.randn(5)),
                Call(lambda env: torch.randn(5)),
                execg("positions.cache_clear()"),
                *calls(2, vec),
            ],
        ),
        backend,
    )


GLOBAL_STATEMENT = """
import torch

STEP = 0
SCALE = 1.0

def f(x):
    global STEP
    STEP += 1
    if STEP % 3 == 0:
        return x * 0, STEP
    return x * SCALE, STEP
"""


@backends()
def test_global_statement_counter(backend):
    run_case(
        Case(
            "global_statement_counter",
            prog(GLOBAL_STATEMENT),
            [
                *calls(4, vec),
                setg("SCALE", "2.0"),
                *calls(3, vec),
                setg("STEP", "0"),
                *calls(2, vec),
            ],
        ),
        backend,
    )


RNG_QUERIES = """
import torch

def f(x):
    return x + torch.initial_seed() % 7, torch.rand(1)
"""


@backends()
def test_initial_seed_read(backend):
    run_case(
        Case(
            "initial_seed_read",
            prog(RNG_QUERIES),
            [*calls(2, vec), Do(lambda env: torch.manual_seed(5), "seed 5"), Call(vec)],
        ),
        backend,
    )


GRAD_FUNCTION_FORM = """
import torch

lin = torch.nn.Linear(4, 2)

def f(x, train):
    prev = torch.is_grad_enabled()
    torch.set_grad_enabled(train)
    y = lin(x)
    torch.set_grad_enabled(prev)
    with torch.enable_grad():
        z = lin(x) * 2
    return y, z
"""


@backends()
def test_set_grad_enabled_function_form_and_enable_grad(backend):
    def args(flag):
        return lambda env: (torch.randn(2, 4), flag)

    run_case(
        Case(
            "set_grad_enabled_function_form_and_enable_grad",
            prog(GRAD_FUNCTION_FORM),
            [
                Call(args(False)),
                Call(args(False)),
                Call(args(True)),
                Call(args(True)),
                Call(args(True), context=lambda env: torch.no_grad()),
                Call(args(True), context=lambda env: torch.no_grad()),
                Call(args(False)),
            ],
        ),
        backend,
    )


NO_GRAD_DECORATOR = """
import torch

lin = torch.nn.Linear(4, 2)

@torch.no_grad()
def f(x):
    return lin(x), torch.is_grad_enabled()

def g(x):
    return f(x)[0] + lin(x), torch.is_grad_enabled()
"""


@backends()
def test_no_grad_decorated_helper(backend):
    run_case(Case("no_grad_decorated_helper", prog(NO_GRAD_DECORATOR, "g"), calls(3, mat)), backend)


CALLABLE_OBJECT = """
import torch

class Affine:
    __slots__ = ("a", "b")

    def __init__(self, a, b):
        self.a = a
        self.b = b

    def __call__(self, x):
        return x * self.a + self.b

aff = Affine(2.0, torch.zeros(4))
"""


@backends()
def test_callable_object_with_slots(backend):
    run_case(
        Case(
            "callable_object_with_slots",
            prog(CALLABLE_OBJECT, "aff"),
            [
                *calls(2, vec),
                execg("aff.a = 3.0"),
                *calls(2, vec),
                execg("aff.b = torch.ones(4)"),
                *calls(2, vec),
                execg("aff.b.add_(1)"),
                Call(vec),
            ],
        ),
        backend,
    )


DECORATOR_STATE = """
import functools
import torch

def counted(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        wrapper.calls += 1
        return fn(*args, **kwargs) * wrapper.scale
    wrapper.calls = 0
    wrapper.scale = 1.0
    return wrapper

@counted
def f(x):
    return x + 1
"""


@backends()
def test_decorator_with_function_attributes(backend):
    run_case(
        Case(
            "decorator_with_function_attributes",
            prog(DECORATOR_STATE),
            [*calls(2, vec), execg("f.scale = 4.0"), *calls(2, vec)],
            watch=lambda env: {"calls": env.ns.f.calls},
        ),
        backend,
    )


CLASS_COUNTER = """
import torch

class Layer(torch.nn.Module):
    instances_called = 0
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
    def forward(self, x):
        type(self).instances_called += 1
        return self.lin(x) * type(self).instances_called

net = Layer()
"""


@backends()
def test_class_attribute_counter(backend):
    run_case(
        Case(
            "class_attribute_counter",
            prog(CLASS_COUNTER, "net"),
            calls(4, mat),
            watch=lambda env: {"n": env.ns.Layer.instances_called},
        ),
        backend,
    )


ASSERTS = """
import torch

LIMIT = 3

def f(x):
    assert x.shape[0] <= LIMIT, f"too many rows: {x.shape[0]}"
    if x.dtype != torch.float32:
        raise TypeError(f"expected float32, got {x.dtype}")
    return x.sum(0)
"""


@backends()
def test_asserts_and_raises_on_arguments(backend):
    run_case(
        Case(
            "asserts_and_raises_on_arguments",
            prog(ASSERTS),
            [
                *calls(2, lambda env: torch.randn(2, 2)),
                Call(lambda env: torch.randn(4, 2)),
                Call(lambda env: torch.randn(4, 2)),
                setg("LIMIT", "5"),
                Call(lambda env: torch.randn(4, 2)),
                Call(lambda env: torch.randn(2, 2).double()),
                Call(lambda env: torch.randn(2, 2).double()),
                Call(lambda env: torch.randn(2, 2)),
            ],
        ),
        backend,
    )


ITERATOR_ARG = """
import torch

def f(x, it):
    first = next(it)
    rest = list(it)
    return x * first + sum(rest), len(rest)
"""


@backends()
def test_iterator_and_range_arguments(backend):
    run_case(
        Case(
            "iterator_and_range_arguments",
            prog(ITERATOR_ARG),
            [
                Call(lambda env: (torch.ones(2), iter([1.0, 2.0]))),
                Call(lambda env: (torch.ones(2), iter([1.0, 2.0]))),
                Call(lambda env: (torch.ones(2), iter([3.0, 2.0, 5.0]))),
                Call(lambda env: (torch.ones(2), iter(range(2, 6)))),
                Call(lambda env: (torch.ones(2), (v for v in [4.0, 1.0]))),
                Call(lambda env: (torch.ones(2), iter([1.0, 2.0]))),
            ],
        ),
        backend,
    )


SLICE_ARG = """
import torch

def f(x, sl, r):
    return x[sl], [x[i] for i in r]
"""


@backends()
def test_slice_and_range_arguments(backend):
    run_case(
        Case(
            "slice_and_range_arguments",
            prog(SLICE_ARG),
            [
                Call(lambda env: (torch.randn(6), slice(0, 2), range(2))),
                Call(lambda env: (torch.randn(6), slice(0, 2), range(2))),
                Call(lambda env: (torch.randn(6), slice(1, 5, 2), range(1, 3))),
                Call(
                    lambda env: (
                        torch.randn(6),
                        slice(None, None, -1) if False else slice(4, None),
                        range(0, 6, 3),
                    )
                ),
                Call(lambda env: (torch.randn(6), slice(0, 2), range(2))),
            ],
        ),
        backend,
    )


LIST_SORT = """
import torch

ORDER = [3, 1, 2]

def f(x):
    ORDER.sort()
    return x[ORDER[0]] * ORDER[-1], list(ORDER)
"""


@backends()
def test_global_list_sorted_in_place(backend):
    run_case(
        Case(
            "global_list_sorted_in_place",
            prog(LIST_SORT),
            [
                *calls(2, vec),
                execg("ORDER[:] = [2, 0, 1]"),
                *calls(2, vec),
                execg("ORDER.append(0)"),
                Call(vec),
            ],
        ),
        backend,
    )


MAX_BY_VALUE = """
import torch

weights = {"a": 1.0, "b": 3.0}

def f(x):
    best = max(weights, key=weights.get)  # a new bound builtin method every call
    return x * weights[best]
"""


@backends()
def test_max_by_dict_get_replays_and_sees_changes(backend):
    """``weights.get`` is a fresh object each call: decided by the dict's type, not
    compared by identity (which never matched, so the function was monitored every
    call); what max() read of the dict is still guarded."""
    run_case(
        Case(
            "max_by_dict_get",
            prog(MAX_BY_VALUE),
            [
                *calls(3, vec),
                execg("weights['c'] = 5.0"),
                *calls(2, vec),
                execg("weights['c'] = 0.5"),
                *calls(2, vec),
            ],
            min_hits=4,
            max_monitor_runs=3,
        ),
        backend,
    )


ROWS = """
import torch

def f(x, y):
    out = 0
    for row in x:
        out = out + row.sum()
    for a, b in zip(x, y):
        out = out + (a * b).sum()
    return out
"""


@backends()
def test_loop_over_the_rows_of_an_input_tensor_replays(backend):
    """``for row in x`` is Tensor.__iter__, a torch call the graph holds (unbind): not
    an external container whose iteration the guard must re-read."""
    run_case(
        Case(
            "rows_of_an_input",
            prog(ROWS),
            [*calls(3, lambda env: (torch.randn(3, 4), torch.randn(3, 4)))],
            min_hits=2,
            max_monitor_runs=1,
        ),
        backend,
    )


ITERATOR_ONLY_INSPECTED = """
import collections.abc
import torch

def f(x, source):
    if isinstance(source, collections.abc.Iterator):  # inspected, never advanced
        return x * 2
    return x
"""


@backends()
def test_an_iterator_argument_only_inspected_still_replays(backend):
    """Only builtins that iterate (sum, list, next...) read an iterator from outside, and
    refuse the record; isinstance() of one does not."""
    run_case(
        Case(
            "iterator_only_inspected",
            prog(ITERATOR_ONLY_INSPECTED),
            [*calls(3, lambda env: (torch.randn(2), iter([1, 2])))],
            min_hits=2,
            max_monitor_runs=1,
        ),
        backend,
    )


ENUM_AND_USERDICT = """
import collections
import enum
import torch

class Color(enum.Enum):
    R = 1
    G = 2

table = collections.UserDict({"a": 1.0})

def f(x):
    for color in Color:
        x = x + color.value
    for key in table:
        x = x * table[key]
    return x
"""


@backends()
def test_loops_over_an_enum_and_a_user_dict(backend):
    """Iterated in the stdlib's Python (unobserved): guarded as the tuple of what they
    yield, so a key added later is seen, and the loops replay."""
    run_case(
        Case(
            "enum_and_user_dict",
            prog(ENUM_AND_USERDICT),
            [*calls(2, vec), execg("table['b'] = 2.0"), *calls(2, vec)],
            min_hits=2,
            max_monitor_runs=2,
        ),
        backend,
    )


INFERENCE_DECORATED = """
import torch

lin = torch.nn.Linear(4, 2)
cache = {}

@torch.inference_mode()
def predict(x):
    y = lin(x).softmax(-1)
    cache["last"] = y
    return y
"""


@backends()
def test_a_function_decorated_with_inference_mode_replays_inference_tensors(backend):
    """The whole body runs in inference mode: the mock runs its graph in it too, so what
    it returns and keeps are inference tensors, as eager's (F46's other shape)."""

    def watch(env):
        last = env.ns.cache.get("last")
        return {"is_inference": None if last is None else last.is_inference()}

    run_case(
        Case(
            "inference_decorated",
            prog(INFERENCE_DECORATED, "predict"),
            calls(3, mat),
            watch=watch,
            min_hits=2,
        ),
        backend,
    )
