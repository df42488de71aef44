"""Class 54: names the function resolves and library state behind pure-looking calls.

What was wrong (thirteenth session's probes): a keyword added to a
``functools.partial`` after recording; a global defined later that shadows a
builtin (``len``); a module imported inside the function (``import cfg;
cfg.scale``) whose attribute changed; library calls annotated pure that read
state outside their arguments (``inspect.signature`` of a function whose
defaults changed, a ``singledispatch`` registry, weak
reference counts, ``dir(obj)``); ``eval("K")`` replayed in the mock's namespace;
the stored-value count of a sparse argument and the scale of a quantized one.
Each replayed the first call's answer (or raised) after the change.
"""

from __future__ import annotations

import dataclasses

import torch
from harness import Call, Case, backends, calls, execg, prog, program_env, run_case


def vec(env):
    return (torch.arange(4.0),)


PARTIAL = """
import functools

def op(x, scale=1.0, bias=0.0):
    return x * scale + bias

p = functools.partial(op, scale=2.0)

def f(x):
    return p(x)
"""

SHADOWED_BUILTIN = """
def f(x):
    return x * len([1, 2])
"""

IMPORTED = """
import sys, types

cfg = sys.modules.setdefault("fg_soundness_cfg54", types.ModuleType("fg_soundness_cfg54"))
cfg.scale = 2.0
cfg.act = lambda x: x * 2

def f(x):
    import fg_soundness_cfg54
    from fg_soundness_cfg54 import act
    return act(x) * fg_soundness_cfg54.scale
"""

SIGNATURE = """
import inspect

def h(a, s=2.0):
    return a

def f(x):
    return x * inspect.signature(h).parameters["s"].default
"""

CONTEXT_VAR = """
import contextvars

cv = contextvars.ContextVar("cv", default=2.0)

def f(x):
    return x * cv.get()
"""

SINGLE_DISPATCH = """
import functools

@functools.singledispatch
def scale(v):
    return 2.0

def f(x):
    return x * scale(3)
"""

DIR = """
class O:
    pass

o = O()
o.a = 1

def f(x):
    return x * len([n for n in dir(o) if not n.startswith("_")])
"""

EVAL = """
K = 2.0

def f(x):
    return x * eval("K")
"""


@backends()
def test_names_the_function_resolves(backend):
    cases = [
        ("partial_keyword_added", PARTIAL, 'p.keywords["bias"] = 1.0'),
        ("global_shadows_builtin", SHADOWED_BUILTIN, "len = lambda xs: 10"),
        ("imported_module_attribute", IMPORTED, "cfg.scale = 3.0"),
        ("imported_function_replaced", IMPORTED, "cfg.act = lambda x: x * 10"),
        ("eval_of_a_global", EVAL, "K = 5.0"),
    ]
    for name, source, change in cases:
        script = [*calls(3, vec), execg(change), *calls(2, vec)]
        run_case(Case(name, prog(source), script), backend)


@backends()
def test_library_calls_that_read_state_beyond_their_arguments(backend):
    cases = [
        ("signature_defaults", SIGNATURE, "h.__defaults__ = (3.0,)"),
        ("single_dispatch_register", SINGLE_DISPATCH, "scale.register(int, lambda v: 7.0)"),
        ("dir_of_an_object", DIR, "o.b = 2"),
    ]
    for name, source, change in cases:
        script = [*calls(3, vec), execg(change), *calls(2, vec)]
        run_case(Case(name, prog(source), script), backend)


@backends()
def test_a_context_variable_set_between_calls(backend):
    script = [*calls(3, vec), execg("cv.set(3.0)"), *calls(2, vec)]
    run_case(Case("context_var", prog(CONTEXT_VAR), script), backend)


CONTEXT_VAR_OWN = """
import contextvars

cv = contextvars.ContextVar("cv", default=None)
log = []

def collect(h):
    box = cv.get()
    if box is not None:
        box.append(h)

def f(x, keep):
    token = cv.set([])
    collect(x * 2)
    collect(x + 1)
    found = cv.get()
    if not keep:
        cv.reset(token)
    log.append(cv.get() is None)
    return found[0] + found[1]
"""


@backends()
def test_a_context_variable_the_function_sets_itself(backend):
    # Set, read and reset inside the call (transformers' output collector): the record
    # replays; set and left set for the caller: eager's next calls see it, so no record.
    both = [Call(lambda env: (torch.ones(2), True)), Call(lambda env: (torch.ones(2), False))]
    script = [Call(lambda env: (torch.ones(2), False)) for _ in range(3)] + both
    case = Case("context_var_own", prog(CONTEXT_VAR_OWN), script, min_hits=2)
    run_case(dataclasses.replace(case, watch=lambda env: {"log": list(env.ns.log)}), backend)


DELETED_KEY = """
import dataclasses

import torch

d = {"a": 2.0, "b": 3.0}

def f(x):
    v = d["b"]
    del d["a"]
    return x * v
"""


@backends()
def test_a_deleted_key_is_gone_on_the_next_call(backend):
    # Eager raises KeyError from the second call on; a replay must not return a value.
    run_case(Case("deleted_key", prog(DELETED_KEY), calls(3, vec)), backend)


SPARSE = """
import dataclasses

import torch

def f(x):
    return x.to_dense() + x._nnz()
"""


def sparse(nnz):
    def make(env):
        dense = torch.zeros(2, 2)
        dense.view(-1)[:nnz] = 1.0
        return (dense.to_sparse(),)

    return make


QUANTIZED = """
import dataclasses

import torch

def f(q):
    return q.dequantize() * 2
"""


def quantized(scale, zero_point):
    def make(env):
        return (
            torch.quantize_per_tensor(torch.tensor([1.0, -2.0]), scale, zero_point, torch.qint8),
        )

    return make


@backends()
def test_sparse_and_quantized_arguments(backend):
    script = [Call(sparse(3)), Call(sparse(3)), Call(sparse(2)), Call(sparse(4)), Call(sparse(3))]
    run_case(Case("sparse_nnz", prog(SPARSE), script, min_hits=1), backend)
    script = [Call(quantized(0.1, 0)), Call(quantized(0.1, 0)), Call(quantized(0.2, 0))]
    script += [Call(quantized(0.2, 5)), Call(quantized(0.1, 0))]
    run_case(Case("quantized_scale", prog(QUANTIZED), script, min_hits=1), backend)


class Logged(torch.Tensor):
    """A tensor subclass with its own __torch_function__ (one class for both twins: the
    harness compares result types exactly)."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs or {})


SUBCLASS = """
def f(x):
    return x * 2 + 1
"""


def logged(env):
    return (torch.randn(3).as_subclass(Logged),)


@backends(inductor=True)
def test_a_tensor_subclass_argument_keeps_its_type(backend):
    def build():
        return program_env(SUBCLASS, "f", "subclass")

    case = Case("subclass_argument", build, [Call(logged) for _ in range(3)], min_hits=2)
    run_case(case, backend)


class Unit(torch.Tensor):
    """A subclass whose __torch_function__ carries the first argument's unit to its
    results, in code the monitor does not observe."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        out = super().__torch_function__(func, types, args, kwargs or {})
        units = [a.unit for a in args if isinstance(a, Unit) and hasattr(a, "unit")]
        if isinstance(out, Unit) and units:
            out.unit = units[0]
        return out


UNIT_READ = """
def f(x):
    y = x * 2
    return y.unit, y.sum().item()
"""


def in_unit(unit):
    def make(env):
        t = torch.ones(2).as_subclass(Unit)
        t.unit = unit
        return (t,)

    return make


@backends()
def test_an_attribute_a_subclass_sets_on_a_result(backend):
    # ``y.unit`` comes from the argument's unit through the subclass's code (F249).
    def build():
        return program_env(UNIT_READ, "f", "unit_read")

    script = [Call(in_unit("m")), Call(in_unit("m")), Call(in_unit("s")), Call(in_unit("kg"))]
    run_case(Case("subclass_result_attribute", build, script), backend)
