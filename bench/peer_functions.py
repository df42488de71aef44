"""A peer's yardstick: function-level cases after PyTorch's ``test/dynamo/test_functions.py``.

Each case below is a small function of tensors and Python values, rewritten
here in our own words after one test of that file (the name is the original
test's, without ``test_``).  For each case the harness builds two fresh copies
of the function, runs one eagerly and one through
``fullgraph.runtime.compile(fn, backend="eager")`` on the same three calls
(fresh random tensors per call; where the original varies a Python argument
or changes state between calls, so does the call script here) and classifies:

    correct    outputs (values, dtypes, Python types) and the arguments after
               the call agree on every call, and the compiled copy replayed
    wrong      some value or type differs
    crash      the compiled copy raised where eager didn't (or another exception)
    fallback   correct, but stats.fallbacks > 0 or stats.fallback_reason is set
    no-replay  correct, no fallback, but stats.hits == 0

Usage: python bench/peer_functions.py [--json] [-k SUBSTRING] [-v]
"""

from __future__ import annotations

import argparse
import collections
import copy
import dataclasses
import functools
import itertools
import json
import math
import operator
import signal
import sys
import traceback
import types
import warnings
from collections.abc import Callable, MutableMapping
from typing import Any, NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import sub

import fullgraph.runtime as fr

CASES: list[Case] = []
CALLS = 3


@dataclasses.dataclass
class Case:
    name: str
    make: Callable[[dict], Callable]  # per-sequence state -> a fresh function
    inputs: Callable[[int, torch.Generator, dict], tuple]  # call index -> args
    state: Callable[[], dict] = dict  # fresh per sequence (eager / compiled)
    reset: Callable[[], None] | None = None  # before each sequence (module globals)
    note: str = ""


def fresh_copy(fn: Callable) -> Callable:
    """A new function object with the same code, globals and closure (own defaults)."""
    new = types.FunctionType(
        fn.__code__, fn.__globals__, fn.__name__, copy.deepcopy(fn.__defaults__), fn.__closure__
    )
    new.__kwdefaults__ = copy.deepcopy(fn.__kwdefaults__)
    new.__qualname__ = fn.__qualname__
    new.__module__ = fn.__module__
    return new


def tensors(n: int, shape=(10, 10)):
    def build(i, g, st):
        return tuple(torch.randn(*shape, generator=g) for _ in range(n))

    return build


def case(name=None, inputs=None, state=dict, reset=None, note="", factory=False):
    """Register the decorated function (or, with factory=True, a state -> function maker)."""

    def register(fn):
        make = fn if factory else (lambda st: fresh_copy(fn))
        if inputs is None:
            target = fn(state()) if factory else fn
            n = target.__code__.co_argcount
            build = tensors(n)
        else:
            build = inputs
        CASES.append(Case(name or fn.__name__, make, build, state, reset, note))
        return fn

    return register


# ---------------------------------------------------------------- module-level helpers

ONES = torch.ones(10, 10)
LINEAR = torch.nn.Linear(10, 10)
FLAG = True
PARAM = torch.nn.Parameter(torch.ones(4, 4))
PARAM2 = torch.nn.Parameter(torch.ones(2, 2))
ODICT = collections.OrderedDict({"k": 3})
SET_A = {"pear", "plum", "fig"}
SET_B = {"kiwi", "lime", "pear"}
unit_clip = functools.partial(torch.clip, min=0.0, max=1.0)
_counter = 0


class Marker:
    attr = 1


class OrderedSub(collections.OrderedDict):
    pass


class Pair(NamedTuple):
    left: torch.Tensor
    right: torch.Tensor

    def total(self) -> torch.Tensor:
        return self.left + self.right

    @staticmethod
    def one() -> int:
        return 1

    @classmethod
    def label(cls) -> str:
        return cls.__name__


class Bag(MutableMapping):
    def __init__(self):
        self._items = {}

    def __getitem__(self, key):
        return self._items[key]

    def __setitem__(self, key, value):
        self._items[key] = value

    def __delitem__(self, key):
        del self._items[key]

    def __iter__(self):
        return iter(self._items)

    def __len__(self):
        return len(self._items)


BAG = Bag()
BAG["w"] = torch.ones(10, 10) * 3


class Tiny(torch.nn.Module):
    def forward(self, x, y):
        return x * 2 + y


def minus_plus(p, q):
    return p - q + (2.0 + 0.5)


def maybe_diff(p, q, use_diff=True):
    if use_diff:
        return p - q


def times(p, q):
    return p * q


def apply_mod(x, y, mod):
    return mod(x, y)


def bump_global(x):
    global _counter
    _counter += 1
    return x * _counter


def reset_counter():
    global _counter
    _counter = 0


@torch.jit.script_if_tracing
def traced_add(x):
    return x + 1.5


@torch.jit.ignore
def ignored_add(x):
    return x + 2.5


@torch.jit.unused
def unused_add(x):
    return x + 3.5


@torch.jit.script_if_tracing
def traced_cos(x, y, shift=0.7):
    return torch.cos(x * y) + shift


@functools.lru_cache
def cached_sin(x, y, _=None):
    return torch.sin(x * y)


# ---------------------------------------------------------------- the cases


@case("inline_jit_annotations")
def c_jit_annotations(x):
    x = traced_add(x)
    x = ignored_add(x)
    x = unused_add(x)
    return x


@case("inline_script_if_tracing_fn_with_default_args")
def c_traced_default(a, b):
    return traced_cos(a, b)


@case("inline_lru_cache_fn_with_default_args")
def c_lru(a, b):
    return cached_sin(a, 3, b)


@case("add")
def c_add(a, b):
    return a + b


@case("add_")
def c_add_(a, b):
    dup = a.clone()
    return dup.add_(b, alpha=4.0)


@case("addcdiv")
def c_addcdiv(a, b, c):
    return torch.addcdiv(a, b, c, value=3.0)


@case("addcdiv_")
def c_addcdiv_(a, b, c):
    dup = a.clone()
    return dup.addcdiv_(b, c, value=3.0)


@case("is_not_null")
def c_not_null(a, b):
    if a is not None and b is not None:
        return a * b


def _lerp_inputs(i, g, st):
    xs = [torch.randn(2, 2, generator=g) * 4, torch.randn(2, 2, generator=g) * 3]
    ys = [torch.randn(2, 2, generator=g), torch.randn(2, 2, generator=g)]
    return xs, ys, torch.tensor(0.25 * (i + 1))


@case("foreach_lerp_", inputs=_lerp_inputs)
def c_foreach_lerp(xs, ys, w):
    return torch._foreach_lerp_(xs, ys, w)


@case(
    "broadcast_foreach_pow",
    inputs=lambda i, g, st: (
        torch.rand((), generator=g) + 0.5,
        [torch.rand((), generator=g) * 5, torch.rand((), generator=g) * 7],
    ),
)
def c_foreach_pow(base, exps):
    return torch._foreach_pow(base, exps)


@case(
    "addcmul_",
    inputs=lambda i, g, st: (
        torch.ones(2, 2),
        torch.ones(2, 2) + 2,
        torch.rand(2, 2, generator=g),
        torch.tensor(0.2 + 0.1 * i),
    ),
)
def c_addcmul_(x, y, z, s):
    return x.addcmul_(y, z, value=s)


@case("functools_partial")
def c_partial_global(a, b):
    return unit_clip(a - b)


@case("itertools_product")
def c_product(a, b):
    acc = b
    for t, k in itertools.product([a, b], [2, 3]):
        acc = acc + t * k
    return acc


@case("itertools_chain_from_iterable")
def c_chain_from_iterable(a, b):
    acc = b
    for item in itertools.chain.from_iterable([[a, b], [3, 4]]):
        acc = acc - item
    return acc


@case("obj_eq")
def c_obj_eq(a, b):
    v = a * b
    if Marker() == None:
        return -1
    if Marker() != None:
        v = v.cos()
    if Marker() == Marker():
        return -2
    if Marker() != Marker():
        return v - 1
    return -3


@case("cls_is")
def c_cls_is(a, b):
    v = a * b
    if Marker is None:
        return -1
    if Marker is not None:
        v = v.cos()
    if Marker is not Marker:  # noqa: PLR0124
        return -2
    if Marker is Marker:  # noqa: PLR0124
        return v - 1
    return -3


@case("itertools_combinations")
def c_combinations(a, b):
    out = []
    for dims in itertools.combinations((2, 3, 4, 5), 2):
        out.append(torch.zeros(dims))
    return out


@case("np_iinfo")
def c_np_iinfo(a):
    return a - np.iinfo(np.int8).max


@case("np_finfo")
def c_np_finfo(a):
    return a + np.finfo(np.float32).max / 2


@case("constant3")
def c_constant3(a):
    p, q, r = 2, 3, 4
    return p - q + r + a


@case("constant4")
def c_constant4(a, b):
    p, q = 5, 6
    if p > q:
        return a + b
    return b * a


@case("cls_hasattr")
def c_cls_hasattr(x):
    if hasattr(Marker, "attr"):
        x = x + 10
    if hasattr(Marker, "missing"):
        x = x + 20
    return x


@case("finfo")
def c_finfo(a, b):
    if torch.iinfo(torch.int16).bits == 16:
        return torch.finfo(a.dtype).eps * b


@case("globalfn")
def c_globalfn(a, b):
    return sub(b, a)


@case("indirect3")
def c_indirect(a, b):
    method = b.sub
    pos = (a,)
    kw = {}
    return method(*pos, **kw)


@case("methodcall2")
def c_methodcall2(a, b):
    return minus_plus(q=a, p=b) - 2


@case("methodcall3")
def c_methodcall3(a, b):
    return minus_plus(a, q=2.0) * b


@case("is_integer", inputs=lambda i, g, st: (torch.tensor([3]), [1.0, 1.5, 3.0][i]))
def c_is_integer(t, m):
    return 3 * t if m.is_integer() else t


@case("number_method[bit_length,int]", inputs=lambda i, g, st: (torch.tensor([2]), [0, 1, 5][i]))
def c_bit_length(t, m):
    return 2 * t if m.bit_length() else t


@case("number_method[hex,float]", inputs=lambda i, g, st: (torch.tensor([2]), [0.0, 1.0, 2.5][i]))
def c_hex(t, m):
    return 2 * t if m.hex() else t


@case("device_constant")
def c_device_constant(a):
    return a * torch.ones(1, device=torch.device("cpu"))


@case("tuple2")
def c_tuple2(a, b):
    pair = [b, a]
    return sub(*pair)


@case("is_in_onnx_export")
def c_onnx(x, y):
    if torch.onnx.is_in_onnx_export():
        return x + 2
    return y - 2


@case("is_fx_tracing")
def c_fx_tracing(x, y):
    if torch.fx._symbolic_trace.is_fx_tracing():
        return x + 2
    return y - 2


@case("listarg3")
def c_listarg3(a, b):
    kw = {"tensors": (b, a), "dim": 1}
    return torch.cat(**kw)


@case("listarg5")
def c_listarg5(a, b):
    pos = [(b, a)]
    kw = {"dim": 1}
    return torch.cat(*pos, **kw)


class Keeper:
    def __init__(self):
        self.items = []


@case(
    "list_slice",
    state=lambda: {"keeper": Keeper()},
    inputs=lambda i, g, st: (st["keeper"], torch.randn(4, generator=g)),
)
def c_list_slice(keeper, x):
    keeper.items = keeper.items[-2:]
    keeper.items.append(x)
    return torch.sin(x), len(keeper.items)


@case("deque")
def c_deque(a, b):
    dq = collections.deque([b, a])
    dq.append(b - 1)
    dq.extend([b, a])
    dq.insert(1, "bar")
    last = dq.pop()
    other = collections.deque([last])
    dq.extendleft(other)
    other.clear()
    dq.extend(other)
    dq[3] = "slot"
    dq = dq.copy()
    dq.append(dq.popleft())
    dq.extend(collections.deque())
    return list(dq)


@case("slice1")
def c_slice1(a):
    return a[3]


@case("slice5")
def c_slice5(a):
    return a[1::3]


@case("slice6")
def c_slice6(a):
    return torch.unsqueeze(a, 1)[:, :, 3:]


@case("range1")
def c_range1(a):
    return torch.tensor(range(a.size(1)))


@case("range2")
def c_range2(x, y):
    acc = x - y
    for _ in range(x.size(0) - 7):
        acc = acc * y
    return acc


@case("unpack2")
def c_unpack2(a):
    parts = [a[:4], a[6:]]
    p, q = parts
    return p * q


@case("fn_with_self_set")
def c_avg_pool(a, b):
    return F.avg_pool2d(torch.unsqueeze(a, 1) * torch.unsqueeze(b, 0), kernel_size=3, padding=1)


@case("return_tuple1")
def c_return_tuple(a, b):
    return (b - a, a * b, b, a)


@case("globalvar")
def c_globalvar(a, b):
    return a * b - ONES


@case("globalmodule")
def c_globalmodule(x):
    return LINEAR(x)


@case("inline_with_default")
def c_inline_default(a, b, c):
    return maybe_diff(b, a) + c


@case("inner_function")
def c_inner_function(x):
    def twice(t):
        return torch.mul(t, 2)

    return twice(x)


@case("transpose_for_scores")
def c_transpose_for_scores(x):
    shape = x.size()[:-1] + (5, 2)
    x = x.view(*shape)
    return x.permute(1, 0, 2)


@case("load_global_bool")
def c_global_bool(x):
    if FLAG:
        return torch.mul(x, x)
    return x


@case("len_tensor")
def c_len_tensor(x):
    n = len(x)
    return torch.sub(x, n)


@case("dict_copy")
def c_dict_copy(x):
    return dict({"key": x - 1})  # noqa: C418


@case("dict_keys")
def c_dict_keys(x):
    d = {5: x}
    view = d.keys()
    d[6] = x * 2
    other = {5: 0, 6: "zz"}
    return 5 in view, 6 in view, 7 in view, other.keys() == view


@case("dict_values")
def c_dict_values(x):
    d = {1: x}
    vals = d.values()
    d[1] = x - 1
    d[2] = x - 2
    return len(vals)


@case("dict_setdefault2")
def c_setdefault2(x):
    d = {"p": 1, "q": 2}
    d.setdefault("r", 7)
    if d["r"] == 7:
        return x * 2
    return x / 2


@case("dict_setdefault3")
def c_setdefault3(x):
    d = {"p": 1}
    d.setdefault("r")
    if d["r"] is None:
        return x * 2
    return x / 2


@case("dict_update_kwargs")
def c_update_kwargs(x):
    d = {"p": 3}
    d.update(q=5)
    return x + d["p"] * d["q"]


@case("defaultdict_setdefault1")
def c_defaultdict_setdefault1(x):
    d = collections.defaultdict.fromkeys("pq", "z")
    d["p"] = 1
    d["q"] = 2
    d.setdefault("p", 9)
    if d["p"] == 1:
        return x * 2
    return x / 2


@case("defaultdict_setdefault3")
def c_defaultdict_setdefault3(x):
    d = collections.defaultdict.fromkeys("p", "z")
    d["p"] = 1
    d.setdefault("r")
    if d["r"] is None:
        return x * 2
    return x / 2


@case("dict_id_guard")
def c_dict_id_guard(x):
    alias = ODICT
    for k in ODICT:
        x = x + ODICT[k] * alias[k]
    return x


@case("callable_lambda")
def c_callable_lambda(x):
    if callable(lambda t: False):
        return x * 2
    return x / 2


@case("callable_builtin")
def c_callable_builtin(x):
    if callable(max):
        return x * 2
    return x / 2


class WithCall:
    def __call__(self):
        pass


class WithoutCall:
    pass


@case(
    "callable_class",
    inputs=lambda i, g, st: (torch.randn(4, generator=g), [WithoutCall(), WithCall(), 1.5][i]),
)
def c_callable_class(x, arg):
    if callable(arg):
        return x * 3
    return x + 1


@case(
    "callable_list",
    inputs=lambda i, g, st: (torch.randn(4, generator=g), [[1, 2], (3, 4), [5, 6]][i]),
)
def c_callable_list(x, arg):
    if callable(arg):
        return x
    return x - len(arg)


@case("len_constant_misc_iterables")
def c_len_misc(x):
    n = len((4, 5)) + len("abcde")
    return torch.sub(x, n)


@case("dict_kwargs")
def c_dict_kwargs(x):
    return dict(first=x * 2, second=x * 3)  # noqa: C408


@case("ordered_dict_kwargs")
def c_ordered_dict_kwargs(x):
    return collections.OrderedDict(item=torch.zeros(10) + 2)


@case("custom_dict_kwargs")
def c_custom_dict_kwargs(x):
    return OrderedSub(item=torch.zeros(10) + 2)


@case("float")
def c_float(x):
    v = float(2.5)  # noqa: UP018
    v += float("0.25")
    return torch.mul(x, v)


@case("is_floating_point")
def c_is_floating_point(x):
    y = x * 2
    return torch.is_floating_point(y), torch.is_floating_point(input=y)


@case("get_default_dtype")
def c_default_dtype(x):
    if x.dtype == torch.get_default_dtype():
        return x * 2
    return x / 2


@case("is_any_autocast_enabled")
def c_any_autocast(x):
    if torch._C._is_any_autocast_enabled():
        return x * 2
    return x / 2


@case("list_compare_polyfill")
def c_list_compare(x):
    for p, q, w in [
        [(1, 2, 3), (1, 2, 3), 1.5],
        [(1, 5, 3), (1, 2, 3), 2.5],
        [(1, 2), (1, 2, 3), 3.5],
        [(1, 2, 3), (1, 2), 4.5],
        [(1, -3, 3), (1, 2, 3), 5.5],
    ]:
        if p != q:
            x += 1 * w
        if p == q:
            x += 2 * w
        if p < q:
            x += 4 * w
        if p > q:
            x += 8 * w
        if p <= q:
            x += 16 * w
        if p >= q:
            x += 32 * w
    return x


@case("promote_types")
def c_promote_types(x):
    if x.dtype == torch.promote_types(torch.int64, torch.float32):
        return x * 2
    return x / 2


@case("cublas_allow_tf32")
def c_tf32(x):
    if torch.backends.cuda.matmul.allow_tf32:
        return x.cos() * 2
    return x.sin() / 2


@case("get_calculate_correct_fan")
def c_fan(x):
    fan = torch.nn.init._calculate_correct_fan(x, "fan_out")
    return x * fan


@case("tensor_is_complex")
def c_tensor_is_complex(x):
    if x.is_complex():
        return x * 2
    return x / 2


@case("tensor_type")
def c_tensor_type(a, b):
    half = a.to(torch.float16)
    return b.type(half.type())


@case("tensor_type3")
def c_tensor_type3(a, b):
    half = a.type(torch.HalfTensor)
    return b.type(half.type())


@case("tensor_type4")
def c_tensor_type4(a, b):
    half = a.type("torch.HalfTensor")
    return b.type(half.type())


@case("tensor_element_size")
def c_element_size(a):
    n = a.element_size()
    if n > 2:
        return (a * n, a - n)
    return (a - n, a * n)


@case("ndim")
def c_ndim(x):
    if x.ndim == 2 and x.ndimension() == 2 and x.dim() == 2:
        return x * 2


@case("mT")
def c_mT(x):
    return torch.zeros_like(x.mT) + x.mT


@case("shape1")
def c_shape1(x):
    if x.shape[1] == 10:
        return x * 2


@case("del")
def c_del(a, b):
    p = a * 2
    q = p - 3
    del p, a
    return b * q


@case("chunks1")
def c_chunks(x):
    step = 2
    assert x.shape[0] % step == 0
    assert x.shape[0] // step == 5
    return x[:step] * x[-step:]


@case("import1")
def c_import(x, y):
    import torch as th
    from torch import mul

    return mul(th.sub(x, y), y)


@case("return_dict")
def c_return_dict(x, y):
    lst = [x * y, x, True]
    return {"p": y, "lst": lst, "q": y, "again": lst, "r": x}


@case("return_dict2")
def c_return_dict2(x, y):
    out = {"p": y}
    out["lst"] = [x * y, x]
    out["q"] = x
    out["lst"].append(None)
    return out


@case("funcdef_closure")
def c_closure(x, y):
    x = x * y - 1.0

    def inner(z):
        nonlocal x, y
        y = x - z + 5.0
        x = y * z + 1.0

    inner(0.5)
    inner(1.5)
    return x, y


@case("inline_softmax")
def c_softmax(x, y):
    return torch.nn.Softmax(dim=0)(x - y * 3)


@case("dtype_compare")
def c_dtype_compare(a, b):
    if a.dtype == torch.float64:
        return a + 3
    if a.dtype == torch.float32:
        return a * b - 7


@case("build_list_unpack")
def c_list_unpack(a, b):
    g1 = (t * 2 for t in (b, a))
    g2 = (t / 2 for t in (b, a))
    return torch.cat([*g1, *g2], dim=0)


@case("tensor_len")
def c_tensor_len(a, b):
    return a * b - len(b) + a.__len__()


@case("pop")
def c_pop(a, b):
    lst = [b, a]
    lst.append(b * 2)
    lst.extend([a - 1, a * b])
    lst.pop(-1)
    lst.pop(1)
    lst.pop()
    p, q = lst
    return p * q


@case("list_index_with_constant_tensor")
def c_index_tensor(a, b):
    lst = [b, a, b * 2, a * 2]
    return lst[torch.as_tensor(3)]


@case("startswith")
def c_startswith(a, b):
    x = a * b
    if "barfoo".startswith("bar") and "minus" in minus_plus.__name__:
        x = x - 1
    return x


@case("dict_ops")
def c_dict_ops(a, b):
    d = {"p": a * 2, "q": b - 1}
    assert d.get("nope") is None
    v = d.pop("q") + d.get("p") + d.get("absent", 5) + d.pop("absent", 6)
    d.update({"s": 4})
    d["r"] = v - d["s"]
    if "r" in d and "absent" not in d:
        return d["r"] * d["p"] - len(d)


@case("inline_jit__unwrap_optional")
def c_unwrap_optional(x):
    if torch.jit._unwrap_optional(x) is None:
        return torch.zeros(3)
    return x.cos()


@case("zip_longest")
def c_zip_longest(x):
    nums = [4, 5, 6]
    chars = ["x", "y"]
    flags = [False, True, False, True]
    return torch.cos(x - 1), list(itertools.zip_longest(nums, chars, flags, fillvalue=0))


@case(
    "torch_size_as_dict_key",
    state=lambda: {"cache": {}},
    inputs=lambda i, g, st: (torch.randn(3, 2, generator=g), st["cache"]),
)
def c_size_key(x, cache):
    if x.shape not in cache:
        cache[x.shape] = x
    return x * cache[x.shape]


@case("dict_param_keys")
def c_param_keys(a):
    d = {"p": a, PARAM: 4}
    return d["p"] * d[PARAM]


@case("dict_mutable_map")
def c_mutable_map(x):
    plain = dict(BAG)
    return x + plain["w"]


def _scale(x, w=2):
    return x * w


@case("unpack_mutable_map")
def c_unpack_mutable_map(x):
    return _scale(x, **BAG)


@case("default_dict_list", state=lambda: {"dd": collections.defaultdict(list)}, factory=True)
def c_default_dict_list(st):
    dd = st["dd"]

    def fn(x):
        dd["p"] = x * 2
        dd[PARAM2] = 7
        dd["r"] = x - 3
        return dd["missing"], dd

    return fn


@case("default_dict_closure", state=lambda: {"dd": collections.defaultdict(dict)}, factory=True)
def c_default_dict_closure(st):
    dd = st["dd"]

    def fn(x):
        dd["p"] = x * 2
        dd["r"] = x - 3
        return dd["missing"], dd

    return fn


class Holder:
    x = 4

    def __init__(self):
        self.y = 5


HOLDER = Holder()


@case("class_dict")
def c_class_dict(x):
    if "x" in type(HOLDER).__dict__:
        return x * 2
    return x / 2


@case("default_dict_constr")
def c_default_dict_constr(x):
    dd = collections.defaultdict(lambda: dict())  # noqa: C408
    dd["p"] = x * 2
    dd[PARAM2] = 7
    dd["r"] = x - 3
    dd.update({"q": x * 4})
    dd.update([["s", x - 1], ("t", x + 1)])
    dd.update(zip("pq", [x * 5, x * 6]))
    return dd["q"], dd


@case(
    "dict_tuple_lazy_guard",
    inputs=lambda i, g, st: (
        torch.randn(3, generator=g),
        [{1: 2, 2: 3}, {1: 2, 2: 4}, (5, 2, 7)][i],
    ),
)
def c_lazy_guard(x, y):
    return torch.cos(x) * y[1]


@case("call_dict1")
def c_call_dict1(x):
    d1 = dict()  # noqa: C408
    d1["k"] = x * 2
    d2 = collections.OrderedDict()
    d2["k"] = x * 3
    return d1["k"] - d2["k"] - 1


@case("call_dict2")
def c_call_dict2(x):
    d1 = dict()  # noqa: C408
    d1["k"] = x
    d2 = collections.OrderedDict(d1)
    if isinstance(d2, collections.OrderedDict):
        return x * 2
    return x / 2


@case("call_dict5")
def c_call_dict5(x):
    pairs = iter([("p", x), ("q", x * 2), ("r", x * 3)])
    d1 = dict(pairs)
    d1["p"] = x - 10
    d2 = collections.OrderedDict(pairs)
    d2["r"] = x - 20
    return d1["p"] * d2["r"] - 1


@case("dict_fromkeys")
def c_fromkeys(x, y):
    names = ["p", "q"]
    d = dict.fromkeys(names)
    d1 = dict.fromkeys(d, x * 2)
    d2 = collections.defaultdict.fromkeys(iter(d1), x - 3)
    d3 = collections.OrderedDict.fromkeys(tuple(names), value=y)
    return d1["p"] * d2["q"] - d2["p"] + d1["q"] + d3["p"] * d3["q"]


@case("dict_update")
def c_dict_update(x, y, z):
    d = {"p": x, "q": y}
    d.update({"p": y * 2})
    d.update([("q", z - 1), ["r", z]])
    d.update(zip("pq", [z * 3, y - 2]))
    od = collections.OrderedDict(p=x * 2, q=y - 2)
    od.update({"p": y * 5})
    od.update([["q", z - 6], ("r", z * 7)])
    od.update(zip("pq", [z + 3, x - 2]))
    return d["p"] + od["p"] * od["r"] - d["q"] * od["q"] + d["r"]


@case("min_max")
def c_min_max(a, b):
    c = a * b
    a = a.mean()
    b = b.mean()
    a = max(min(a, 1), 0)
    b = min(1, max(0, b))
    return min(a, b) - max(a, b) + c


@case("symbool_to_int")
def c_symbool(x):
    if sum(s == -1 for s in x.size()) == 0:
        return x * 2
    return x / 2


@case("map_sum")
def c_map_sum(a, b, c, d):
    return sum(map(lambda t: t * 2, [a, b, c, d]))  # noqa: C417


@case("sum_with_start_kwarg")
def c_sum_start(a, b, c, d):
    return sum([a, b, c], start=d)


@case("reduce_with_initial")
def c_reduce(a, b, c, d):
    return functools.reduce(operator.mul, [a, b, c], d)


@case("reduce_with_single")
def c_reduce_single(x):
    return functools.reduce(lambda p, q: (p, q), [x])


@case("tuple_contains")
def c_tuple_contains(a, b):
    names = ("x", "y", "z")
    others = ("u", "v", "w")
    if "x" in names and "y" not in others:
        return a * b
    return a / b


@case("set_update_list_with_duplicated_items")
def c_set_dup(x):
    l1 = ["pear", "fig", "pear"]
    l2 = ["lime", "fig"]
    if len({*l1, *l2}) == 3:
        return x * 2
    return x / 2


@case("set_contains")
def c_set_contains(a, b):
    vals = set(["p", "q", "r"])  # noqa: C405
    first = a * b if "p" in vals else a / b
    second = a * b if "s" in vals else a / b
    return first, second


@case("set_isdisjoint")
def c_isdisjoint(a):
    if SET_A.isdisjoint(SET_B):
        return a * 2
    return a / 2


@case("set_intersection")
def c_intersection(a, b):
    both = SET_A.intersection(SET_B)
    first = a * b if "pear" in both else a / b
    second = a * b if "fig" in both else a / b
    return first, second


@case("set_difference")
def c_difference(a, b):
    only = SET_A.difference(SET_B)
    first = a * b if "pear" in only else a / b
    second = a * b if "fig" in only else a / b
    return first, second


def _constant_set_inputs(i, g, st):
    if i == 2:
        st["s"].add(9)  # changed between calls: the result must follow
    return (torch.rand(4, generator=g),)


@case("constant_set", state=lambda: {"s": {1, 2}}, inputs=_constant_set_inputs, factory=True)
def c_constant_set(st):
    s = st["s"]

    def fn(x):
        return torch.sin(x) * len(s)

    return fn


@case(
    "set_add",
    state=lambda: {"s": {1, 2}},
    inputs=lambda i, g, st: (torch.rand(4, generator=g),),
    factory=True,
)
def c_set_add(st):
    s = st["s"]

    def fn(x):
        s.add(len(s) + 1)
        return torch.sin(x) * len(x), len(s)

    return fn


@case("tuple_iadd")
def c_tuple_iadd(a, b):
    out = (b, a)
    out += (a * b, a - b)
    return out


@case("unpack_ex3")
def c_unpack_ex(x):
    vals = (x, x * 2, x * 3, x * 4)
    p, *mid, q = vals
    return p * q - mid[1]


@case("const_tuple_add2")
def c_const_tuple_add(x):
    vals = (x, x * 2, x * 3)
    vals = (None,) + vals + (None, None)
    return vals[1] * vals[3]


@case("list_reversed")
def c_reversed(a, b):
    lst = [a * 2, a * 3, a * 4]
    return a - b + next(iter(reversed(lst)))


@case("list_sorted2")
def c_sorted2(x):
    rows = [("ann", "C", 3), ("bob", "A", 9), ("cid", "A", 1)]
    return (
        x * 2,
        sorted(rows),
        sorted(rows, key=lambda r: r[2]),
        sorted(rows, key=lambda r: r[2], reverse=True),
    )


@case("dict_sorted")
def c_dict_sorted(x):
    d = {4: "p", 11: "q", 2: "r", 7: "s"}
    return x * 2, sorted(d), sorted(d, reverse=True)


@case(
    "dict_hasattr",
    inputs=lambda i, g, st: (
        [
            {"a": torch.randn(3, generator=g)},
            torch.randn(4, generator=g),
            {"a": torch.randn(3, generator=g)},
        ][i],
    ),
)
def c_dict_hasattr(x):
    if hasattr(x, "to"):
        return x.to("cpu")
    if hasattr(x, "items"):
        return torch.sin(x["a"])
    return x


@case("list_clear")
def c_list_clear(a, b):
    lst = [a * 2, a * 3]
    lst.clear()
    lst.append(a - b)
    return lst


@case("not_list")
def c_not_list(a):
    return not [a * 2]


@case("islice_chain")
def c_islice_chain(a, b):
    left = [a * 2, a * 3]
    right = [a * 4, a * 5]
    p, q = list(itertools.islice(itertools.chain(left, right), 1, 3))
    r = next(itertools.islice(left, 1, None))
    return p * q - r


@case("namedtuple")
def c_namedtuple(a, b):
    Trio = collections.namedtuple("Trio", ["p", "q", "pq"])
    tmp = Trio(a, b, a * b)
    return Trio(tmp.p, tmp[1], tmp.pq - b)


@case("namedtuple_defaults")
def c_namedtuple_defaults(a, b):
    Trio = collections.namedtuple("Trio", ["p", "q", "pq"], defaults=(None, 2, None))
    tmp = Trio(a, pq=b)
    return Trio(tmp.p, tmp[1], tmp.pq * b)


@case("namedtuple_user_methods")
def c_namedtuple_methods(a, b):
    pair = Pair(a, b)
    return pair.total(), pair.one(), pair.label()


@case("torch_size_hasattr")
def c_size_hasattr(x):
    if hasattr(x.shape, "_fields"):
        return x * 2
    return x / 2


@case("fstrings1")
def c_fstrings1(a, b):
    v = 2.718
    text = f"{v:.2f} qux"
    if text.startswith("2.72"):
        return a * b


@case("fstrings2", inputs=lambda i, g, st: (torch.randn([10, 7, 10][i], 3, generator=g),))
def c_fstrings2(x):
    text = f"{x.shape[0]} qux"
    if text.startswith("10"):
        return x * 2
    return x / 2


@case("fstrings3")
def c_fstrings3(x):
    text = f"{x.__class__.__name__} baz"
    if text.startswith("Tensor"):
        return x * 2


@case("tensor_new_with_size")
def c_new_with_size(x):
    y = torch.rand(4, 6)
    z = x.new(y.size())
    assert z.size() == y.size()
    return z.shape


@case(
    "is_contiguous_frame_counts",
    inputs=lambda i, g, st: (
        [
            torch.rand(2, 3, 8, 8, generator=g),
            torch.rand(2, 3, 8, 8, generator=g).contiguous(memory_format=torch.channels_last),
            torch.rand(2, 3, 8, 8, generator=g),
        ][i],
    ),
)
def c_contiguous(x):
    if x.is_contiguous():
        return x * 2
    elif x.is_contiguous(memory_format=torch.channels_last):
        return x * 3
    return x * 4


@case("is_contiguous_memory_format")
def c_contiguous_format(t):
    if torch.jit.is_scripting():
        return None
    elif t.is_contiguous(memory_format=torch.contiguous_format):
        return t * 2


@case("list_slice_assignment")
def c_slice_assign(x):
    m = [5, 6, 7, 8]
    m[1:] = [0] * (len(m) - 1)
    return x * 2, m


@case("distributed_is_available")
def c_dist_available(x):
    if torch.distributed.is_available():
        return x * 2
    return x / 2


@case("torch_distributions_functions")
def c_distributions(x):
    normal = torch.distributions.Normal(x, torch.tensor(2.0))
    indep = torch.distributions.Independent(normal, 1)
    return indep.log_prob(x * 0.5)


@case("context_wrapping_nested_functions_no_closure")
def c_nested_no_grad(x):
    @torch.no_grad()
    def helper(t: torch.Tensor) -> torch.Tensor:
        return (t - 1) * 3

    return helper(x)


@case("math_radians", inputs=lambda i, g, st: (torch.rand(10, generator=g), [12, 45, 90][i]))
def c_radians(x, a):
    return x + math.radians(a)


@case("numpy_meshgrid")
def c_meshgrid(x, y):
    r1, r2 = np.meshgrid(x.numpy(), y.numpy())
    return torch.from_numpy(r1), torch.from_numpy(r2)


@case("mean_sum_np")
def c_mean_sum_np(x):
    m = np.mean(x.numpy(), 0)
    s = np.sum(m)
    return torch.from_numpy(np.asarray(s))


@case("return_numpy_ndarray")
def c_return_ndarray(x):
    return x.numpy().T


@case("ndarray_methods_returning_scalar")
def c_ndarray_scalar(x):
    arr = x.numpy()
    return arr.min(axis=1), arr.any(axis=1)


@case("numpy_linalg")
def c_linalg(x):
    return np.linalg.norm(x.numpy(), axis=1)


@case("partials_torch_op_kwarg")
def c_partial_kwarg(x):
    scaled = functools.partial(torch.mul, other=torch.full((10, 10), 3.0))
    return scaled(x)


@case("partials_udf_kwarg")
def c_partial_udf(x):
    scaled = functools.partial(times, q=torch.full((10, 10), 3.0))
    return scaled(x)


@case("partials_udf_kwarg_module")
def c_partial_module(x, y):
    fn = functools.partial(apply_mod, mod=Tiny())
    return fn(x=x, y=y)


@case("partials_lambda")
def c_partial_lambda(x):
    mul = lambda p, q: p * q
    triple = functools.partial(mul, q=3)
    return triple(x)


@case("list_add_then_mutate")
def c_list_add_mutate(x):
    lst = [2, x]
    y = x / 3.0
    lst = lst + [x * 2.0, 5]
    lst.append(y)
    return sum(lst)


@case("in_not_in")
def c_in_not_in(x):
    with_t = [1, 2, 3, 4, x]
    plain = [1, 2, 3]
    assert 2 in with_t
    assert 7 not in plain
    return sum(with_t)


def _filter_inputs(i, g, st):
    a = torch.arange(3, dtype=torch.bfloat16) + i
    b = (torch.arange(3, dtype=torch.bfloat16) + 1).requires_grad_(i != 1)
    return ([a, b],)


@case("filter", inputs=_filter_inputs)
def c_filter(inputs):
    out = inputs[0]
    for t in filter(lambda t: t.requires_grad, inputs):
        out = out * t
    return out


@case("pow_int", inputs=lambda i, g, st: (torch.rand(2, 2, generator=g) + 1, [2, 3, 2][i]))
def c_pow_int(a, b):
    return torch.pow(a, b)


@case(
    "tensor_size_indexed_by_symint",
    inputs=lambda i, g, st: (
        torch.rand(4, [2, 1, 2][i], generator=g),
        torch.rand(4, 5, 6, generator=g),
    ),
)
def c_size_symint(x, y):
    k = x.shape[-1]
    return x + y.shape[k]


@case(
    "partials_as_input_partials_lambda",
    inputs=lambda i, g, st: (
        functools.partial(_times_q, q=[3, 3, 5][i]),
        functools.partial(_times_q, q=2),
        torch.randn(2, 2, generator=g),
    ),
)
def c_partials_as_input(f0, f1, x):
    return f0(x) * f1(x)


def _times_q(p, q):
    return p * q


@case("update_global", reset=reset_counter)
def c_update_global(x):
    return bump_global(x)


@case(
    "is_contiguous_strided",
    inputs=lambda i, g, st: (
        [
            torch.rand(2, 3, 8, 8, generator=g)[:, :, 1:-1, 2:-2],
            torch.rand(2, 3, 8, 8, generator=g),
            torch.rand(2, 3, 8, 8, generator=g)[:, :, 1:-1, 2:-2],
        ][i],
    ),
)
def c_contiguous_strided(x):
    if x.is_contiguous():
        return x * 2
    elif x.is_contiguous(memory_format=torch.channels_last):
        return x * 3
    return x * 4


def _swap_partials(i, g, st):
    y1, y2 = st["y1"], st["y2"]
    pairs = [
        (functools.partial(_times_q, q=y1), functools.partial(_times_q, q=y2)),
        (functools.partial(_times_q, q=y2), functools.partial(_times_q, q=y1)),
        (functools.partial(lambda p, q: p - q, q=y1), functools.partial(_times_q, q=y2)),
    ]
    return (*pairs[i], torch.randn(2, 2, generator=g))


@case(
    "partials_recompilation",
    state=lambda: {"y1": torch.full((2, 2), 2.0), "y2": torch.full((2, 2), 3.0)},
    inputs=_swap_partials,
)
def c_partials_recompile(f0, f1, x):
    return f0(x) * f1(x)


@case("manual_seed", inputs=lambda i, g, st: ())
def c_manual_seed():
    torch.manual_seed(7)
    return torch.randint(0, 9, (6,))


@case("no_recompile_inner_function", inputs=lambda i, g, st: (torch.rand(2, generator=g),))
def c_inner_print(inp):
    def add(y):
        return inp * y

    print("graph break", file=sys.stderr)
    return add(torch.ones(1) * 2)


@case(
    "non_inlined_closure", inputs=lambda i, g, st: tuple(torch.randn(1, generator=g) for _ in "ab")
)
def c_rebound_closure(x, y):
    op = lambda p, q: p + q

    def inner():
        return op(x, y)

    res = inner()
    op = lambda p, q: p * q
    res += inner()
    return res


@case(
    "np_constant_collections_as_input",
    inputs=lambda i, g, st: (
        torch.randn(2, generator=g),
        ["int16", np.dtype("int32"), np.iinfo("int16")][i],
    ),
)
def c_np_info_arg(a, dt):
    return a - np.iinfo(dt).max


def _cmp_op_inputs(i, g, st):
    return torch.randn(10, generator=g), [operator.lt, operator.is_, operator.lt][i]


@case("compare_constant_and_tensor", inputs=_cmp_op_inputs)
def c_compare_op(x, op):
    return op(-0.5, x)


@case(
    "pos",
    inputs=lambda i, g, st: [(torch.ones(4), 2), (2, torch.ones(4)), (-1.5, 1.5)][i],
)
def c_pos(x, y):
    return operator.pos(x) * +y


@case(
    "index",
    inputs=lambda i, g, st: ([10, -100, 10][i], torch.ones(1)),
)
def c_index(n, t):
    return torch.mul(t, operator.index(n))


@case(
    "truth",
    inputs=lambda i, g, st: [(torch.ones(1), 1), (torch.zeros(1), 1), (3, 0.0)][i],
)
def c_truth(x, y):
    return operator.truth(x) and bool(y)


@case("unary_fold_op", inputs=lambda i, g, st: ())
def c_unary_fold():
    return [list(map(op, range(-3, 3))) for op in (abs, operator.neg, operator.truth)]


@case("range_with_slice_index")
def c_range_slice(x):
    acc = 2
    for k in range(5)[1::2]:
        acc *= acc + k
    return x * acc


@case("range_with_index")
def c_range_index(x):
    return x * range(3, 30, 3)[4]


@case("rand_tensor_partial", inputs=lambda i, g, st: ())
def c_rand_partial():
    Shape = collections.namedtuple("Shape", ["b", "h", "s", "d"])
    make = functools.partial(torch.rand, dtype=torch.float16, requires_grad=True)
    q = functools.partial(make, Shape(2, 2, 4, 3))
    return (q() + q()).shape


def _ellipsis_inputs(i, g, st):
    return [
        (np.zeros(4), np.s_[...], np.ones(4)),
        (np.array([[1, 1], [2, 2]]), np.s_[0, ...], np.zeros(2)),
        (np.array([[1, 1], [2, 2]]), np.s_[..., 1], np.array([3, 3])),
    ][i]


@case("elipsis", inputs=_ellipsis_inputs)
def c_ellipsis(a, ind, val):
    a[ind] = val
    return a


def _default_tensor_state():
    def helper(x=torch.zeros((2, 2)), *, kw_x=torch.zeros((1, 2))):  # noqa: B008
        x.add_(1)
        kw_x.add_(1)
        return x, kw_x

    return {"helper": helper}


def _default_tensor_inputs(i, g, st):
    if i == 2:  # the default changes between calls, as patch.object does in the original
        st["helper"].__defaults__ = (torch.ones((3, 4)),)
    return ()


@case(
    "func_default_tensor_args",
    state=_default_tensor_state,
    inputs=_default_tensor_inputs,
    factory=True,
)
def c_default_tensors(st):
    helper = st["helper"]

    def fn():
        x, kw_x = helper()
        return x.clone(), kw_x.clone()

    return fn


@case("func_default_torch_args", inputs=lambda i, g, st: ())
def c_default_torch_args():
    def make(dt=torch.float16, ds=torch.Size((1, 2, 3)), dd=torch.device("cpu")):  # noqa: B008
        return torch.ones(ds, dtype=dt, device=dd)

    return make()


@dataclasses.dataclass
class Output:
    scalar: int = 2
    named: dict = dataclasses.field(default_factory=dict)
    items: list = dataclasses.field(default_factory=list)

    def scale(self):
        return self.scalar * 3


@case("dataclass_factory")
def c_dataclass_factory(x):
    a = Output(2)
    k = a.scale()
    b = Output(4, named={"x": x})
    c = Output()
    if isinstance(a.named, dict):
        x = torch.cos(x)
    c.scalar = 7
    c.named["x"] = x
    return c, torch.sin(x) * k + b.named["x"] - c.scalar


@case(
    "listlike_of_tensors_contains_constant", inputs=lambda i, g, st: (torch.randn(1, generator=g),)
)
def c_listlike_contains(x):
    x.add_(1)
    return 1 in [x], 2 in {x}


@case(
    "cast_tensor_single_elem",
    inputs=lambda i, g, st: (torch.tensor([[1.0, 3.0, 1.0][i]]), [float, int, float][i]),
)
def c_cast_single(x, t):
    x = x + 2
    return t(x)


@case("set_construction", inputs=lambda i, g, st: (torch.randn(4, generator=g),))
def c_set_construction(x):
    y = x.add_(1)
    s = set({x})
    s.add(y)
    return len(s)


FROZEN = {frozenset(): torch.ones(4) * 5}


@case("frozenset_reconstruction", inputs=lambda i, g, st: (torch.randn(4, generator=g),))
def c_frozenset_key(x):
    k = frozenset()
    return FROZEN[k] * x


# ---------------------------------------------------------------- harness


class Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise Timeout("case took longer than 120 s")


def compare(a: Any, b: Any, path: str = "out") -> str | None:
    """None when eager value a and compiled value b agree; else what differs."""
    ta, tb = type(a), type(b)
    if ta is not tb:
        namedtuple_pair = (
            isinstance(a, tuple)
            and hasattr(a, "_fields")
            and getattr(b, "_fields", None) == a._fields
            and ta.__name__ == tb.__name__
        )
        if not namedtuple_pair:  # a namedtuple class made per call is a new class each call
            return f"{path}: type {ta.__name__} vs {tb.__name__}"
    if isinstance(a, torch.Tensor):
        if a.dtype != b.dtype:
            return f"{path}: dtype {a.dtype} vs {b.dtype}"
        if a.shape != b.shape:
            return f"{path}: shape {tuple(a.shape)} vs {tuple(b.shape)}"
        if a.requires_grad != b.requires_grad:
            return f"{path}: requires_grad {a.requires_grad} vs {b.requires_grad}"
        x, y = a.detach(), b.detach()
        if x.is_floating_point() or x.is_complex():
            same = torch.allclose(x, y, rtol=1e-5, atol=1e-6, equal_nan=True)
        else:
            same = torch.equal(x, y)
        if not same:
            return f"{path}: values differ (eager {_brief(x)} vs fullgraph {_brief(y)})"
        return None
    if isinstance(a, np.ndarray):
        if a.dtype != b.dtype or a.shape != b.shape:
            return f"{path}: ndarray {a.dtype}{a.shape} vs {b.dtype}{b.shape}"
        if not np.allclose(a, b, equal_nan=True) if a.dtype.kind in "fc" else not (a == b).all():
            return f"{path}: ndarray values differ"
        return None
    if isinstance(a, (list, tuple, collections.deque)):
        if len(a) != len(b):
            return f"{path}: length {len(a)} vs {len(b)}"
        for i, (p, q) in enumerate(zip(a, b)):
            diff = compare(p, q, f"{path}[{i}]")
            if diff:
                return diff
        return None
    if isinstance(a, dict):
        ka, kb = list(a), list(b)
        if len(ka) != len(kb) or any(compare(p, q) for p, q in zip(ka, kb)):
            return f"{path}: keys {ka!r:.80} vs {kb!r:.80}"
        for p, q in zip(ka, kb):
            diff = compare(a[p], b[q], f"{path}[{p!r:.20}]")
            if diff:
                return diff
        return None
    if isinstance(a, float) and math.isnan(a) and math.isnan(b):
        return None
    if isinstance(a, (set, frozenset, int, float, str, bytes, bool, type(None), torch.Size)):
        return None if a == b else f"{path}: {a!r:.60} vs {b!r:.60}"
    if isinstance(a, np.generic):
        return None if a == b and a.dtype == b.dtype else f"{path}: {a!r} vs {b!r}"
    if isinstance(a, functools.partial):
        return compare((a.func, a.args, a.keywords), (b.func, b.args, b.keywords), path)
    if a is b:
        return None
    if isinstance(a, types.FunctionType):  # a lambda made afresh for each copy
        return None if a.__code__ is b.__code__ else f"{path}: {a!r:.60} vs {b!r:.60}"
    if dataclasses.is_dataclass(a) or (
        hasattr(a, "__dict__") and not isinstance(a, (type, types.FunctionType, torch.nn.Module))
    ):
        return compare(vars(a), vars(b), f"{path}.__dict__")
    return None if a == b else f"{path}: {a!r:.60} vs {b!r:.60}"


def _brief(t: torch.Tensor) -> str:
    flat = t.flatten()
    return repr(flat[:3].tolist()) + ("..." if flat.numel() > 3 else "")


def run_sequence(c: Case, compiled: bool, seed: int):
    """Three calls of a fresh copy; per call (result | exception, args after the call)."""
    if c.reset:
        c.reset()
    st = c.state()
    fn = c.make(st)
    target = fr.compile(fn, backend="eager") if compiled else fn
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    outcomes = []
    for i in range(CALLS):
        args = c.inputs(i, g, st)
        try:
            out = target(*args)
            outcomes.append(("ok", out, args))
        except Timeout:
            raise
        except Exception as error:  # noqa: BLE001
            outcomes.append(("raise", error, args, traceback.format_exc()))
    return outcomes, (target.stats if compiled else None)


def classify(c: Case, seed: int) -> dict:
    eager, _ = run_sequence(c, False, seed)
    try:
        got, stats = run_sequence(c, True, seed)
    except Timeout as error:
        return {"name": c.name, "result": "crash", "detail": str(error)}
    detail = None
    result = None
    for i, (e, f) in enumerate(zip(eager, got)):
        if e[0] == "raise" and f[0] == "raise":
            if type(e[1]) is not type(f[1]) or str(e[1]) != str(f[1]):
                result, detail = "crash", f"call {i}: eager {e[1]!r:.80}, fullgraph {f[1]!r:.120}"
                break
            continue
        if f[0] == "raise":
            last = f[3].strip().splitlines()[-1]
            result, detail = "crash", f"call {i}: {last[:200]}"
            break
        if e[0] == "raise":
            result, detail = "wrong", f"call {i}: eager raised {e[1]!r:.80}, fullgraph returned"
            break
        diff = compare(e[1], f[1]) or compare(e[2], f[2], "args")
        if diff:
            result, detail = "wrong", f"call {i}: {diff}"
            break
    row = {"name": c.name}
    if stats is not None:
        row["stats"] = dataclasses.asdict(stats)
    if result is None:
        if stats.fallbacks > 0 or stats.fallback_reason:
            result = "fallback"
            detail = stats.fallback_reason or f"{stats.fallbacks} calls fell back"
        elif stats.hits == 0:
            result = "no-replay"
            detail = stats.unrecorded_reason or f"{stats.monitor_runs} monitoring runs, 0 hits"
        else:
            result = "correct"
    row["result"] = result
    row["detail"] = detail or ""
    return row


ORDER = ["wrong", "crash", "fallback", "no-replay", "correct"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("-k", default="", help="only cases whose name contains this")
    parser.add_argument("-v", action="store_true", help="show stats per case")
    opts = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    signal.signal(signal.SIGALRM, _alarm)
    rows = []
    for index, c in enumerate(CASES):
        if opts.k not in c.name:
            continue
        signal.alarm(120)
        try:
            rows.append(classify(c, 1000 + index))
        except Timeout as error:
            rows.append({"name": c.name, "result": "crash", "detail": str(error)})
        finally:
            signal.alarm(0)
    totals = {k: sum(r["result"] == k for r in rows) for k in ORDER}
    if opts.json:
        json.dump({"cases": rows, "totals": totals, "n": len(rows)}, sys.stdout, indent=1)
        print()
        return 0
    width = max(len(r["name"]) for r in rows)
    for r in sorted(rows, key=lambda r: ORDER.index(r["result"])):
        line = f"{r['name']:<{width}}  {r['result']:<9}  {r['detail'][:150]}"
        if opts.v and "stats" in r:
            s = r["stats"]
            line += f"  [mon={s['monitor_runs']} hits={s['hits']} fb={s['fallbacks']}]"
        print(line.rstrip())
    print()
    print(f"{len(rows)} cases: " + ", ".join(f"{totals[k]} {k}" for k in ORDER))
    return 0


if __name__ == "__main__":
    sys.exit(main())
