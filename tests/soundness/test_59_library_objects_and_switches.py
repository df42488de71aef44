"""Class 59: torch.distributions, library switches, and objects the call made.

Found by the fourteenth session's probe of distributions and model-repo idioms
(F258-F264):

- ``Exponential(rate).sample()`` is ``rate.new(shape).exponential_()``: the
  graph wrote the ``torch.Size`` as a tuple, which ``Tensor.new`` takes as data,
  so every replay drew one number.
- A class attribute read through an object the call made (``Helper().scale``,
  ``self.TABLE["a"]``) was not guarded.
- ``Distribution.set_default_validate_args`` switched between calls, a KL pair
  registered between calls, ``parametrize.cached()``: read by torch's Python
  unobserved.
- torch switches the function calls (``set_default_validate_args``,
  ``set_fastpath_enabled``, ``enable_flash_sdp``) were taken as pure.
- ``"lr={0.lr}".format(args)`` and ``max(items, key=attrgetter("score"))`` read
  attributes in C.
"""

from __future__ import annotations

import contextlib
from functools import partial

import pytest
import torch
from harness import Call, Case, Do, backends, calls, execg, run_case
from harness import prog as shared_prog
from torch import distributions

prog = partial(shared_prog, name="library59")


def fresh(env):
    return (torch.rand(4) + 0.5,)


SAMPLERS = """
import torch
from torch import distributions as D

def f(rate):
    return (
        D.Exponential(rate).sample(),
        D.Laplace(rate, 1.0).sample(),
        rate.new(rate.shape).uniform_(0.5, 1),
        rate.new(rate.shape + (2,)).normal_(),
    )
"""


@backends()
def test_samples_of_a_size_made_with_tensor_new(backend):
    run_case(Case("tensor_new_of_a_size", prog(SAMPLERS), calls(4, fresh), min_hits=2), backend)


CLASS_ATTRIBUTES = """
import torch

class Helper:
    scale = 1.0
    TABLE = {"a": 1.0}
    cache = {}

    @property
    def s(self):
        return self.scale

    def get(self, n):
        if n not in self.cache:
            self.cache[n] = n * 2.0
        return self.cache[n] * self.TABLE["a"]

def f(x):
    h = Helper()
    return x * h.s * h.get(3)
"""


def helper_state(env):
    helper = env.ns.Helper
    return {"scale": helper.scale, "table": dict(helper.TABLE), "cache": dict(helper.cache)}


@backends()
def test_class_attributes_read_through_an_object_the_call_made(backend):
    script = [*calls(2, fresh), execg("Helper.scale = 2.0"), *calls(2, fresh)]
    script += [execg("Helper.TABLE['a'] = 3.0"), *calls(2, fresh)]
    script += [execg("Helper.cache.clear()"), *calls(2, fresh)]
    case = Case("class_attributes", prog(CLASS_ATTRIBUTES), script, watch=helper_state, min_hits=3)
    run_case(case, backend)


VALIDATION = """
import torch
from torch import distributions as D

def f(p):
    return D.Bernoulli(probs=p.clamp(0.1, 0.9)).log_prob(torch.tensor([0.5, 0.0, 1.0, 1.0]))
"""


def validate(on):
    return Do(
        lambda env: distributions.Distribution.set_default_validate_args(on), f"validate={on}"
    )


@pytest.fixture
def validation_restored():
    before = distributions.Distribution._validate_args
    yield
    distributions.Distribution.set_default_validate_args(before)


@backends()
def test_validation_switched_between_calls(backend, validation_restored):
    script = [validate(False), *calls(2, fresh), validate(True), *calls(2, fresh)]
    script += [validate(False), *calls(2, fresh)]
    run_case(Case("validate_args_switch", prog(VALIDATION), script, min_hits=2), backend)


REGISTERED_KL = """
import torch
from torch import distributions as D
from torch.distributions.kl import register_kl

class Mine(D.Normal):
    pass

def f(loc):
    return D.kl_divergence(Mine(loc, 1.0), D.Normal(loc * 2, 1.0))

def register():
    @register_kl(Mine, D.Normal)
    def _kl(p, q):
        return (p.loc - q.loc).abs() + 42.0
"""


@backends()
def test_a_kl_pair_registered_between_calls(backend):
    script = [*calls(2, fresh), execg("register()"), *calls(2, fresh)]
    run_case(Case("registered_kl", prog(REGISTERED_KL), script, min_hits=2), backend)


SWITCHES = """
import torch
from torch import distributions as D

def f(x):
    D.Distribution.set_default_validate_args(False)
    torch.backends.mha.set_fastpath_enabled(False)
    return x + 1
"""


def switches(env):
    return getattr(env.ns, "switches_after", None)


@contextlib.contextmanager
def switches_on(env):
    # Both twins share the process's switches: each call starts with them on, and
    # what the call left is noted before the other twin runs.
    distributions.Distribution.set_default_validate_args(True)
    torch.backends.mha.set_fastpath_enabled(True)
    try:
        yield
    finally:
        env.ns.switches_after = (
            distributions.Distribution._validate_args,
            torch.backends.mha.get_fastpath_enabled(),
        )


@backends()
def test_torch_switches_the_function_turns_off(backend, validation_restored):
    script = [Call(fresh, context=switches_on) for _ in range(4)]
    try:
        run_case(
            Case("torch_switches", prog(SWITCHES), script, watch=switches, min_hits=2), backend
        )
    finally:
        torch.backends.mha.set_fastpath_enabled(True)


FORMATTED = """
import operator
import torch

class Args:
    lr = 0.1

class Cand:
    def __init__(self, score):
        self.score = score

args = Args()
cands = [Cand(1.0), Cand(2.0)]

def f(x):
    print("lr={0.lr} best={1}".format(args, len(cands)))
    best = max(cands, key=operator.attrgetter("score"))
    return x * best.score
"""


@backends()
def test_attributes_read_in_c_by_format_and_max(backend):
    script = [*calls(2, fresh), execg("args.lr = 0.2"), *calls(2, fresh)]
    for score in (3.0, 0.5, 4.0):  # the first candidate's score varies: lifted
        script += [execg(f"cands[0].score = {score}"), Call(fresh)]
    run_case(Case("format_and_max", prog(FORMATTED), script), backend)


PARAMETRIZED = """
import torch
import torch.nn.utils.parametrize as P

class Double(torch.nn.Module):
    def forward(self, w):
        return w * 2

torch.manual_seed(0)
model = torch.nn.Linear(4, 2, bias=False)
P.register_parametrization(model, "weight", Double())
"""


def enter_cached(env):
    # Inside parametrize.cached() the weight is computed once and reused, even after
    # its original changes: a replay must not recompute it.
    env.ns.cached_block = torch.nn.utils.parametrize.cached()
    env.ns.cached_block.__enter__()


def leave_cached(env):
    env.ns.cached_block.__exit__(None, None, None)


@backends()
def test_a_parametrized_layer_inside_parametrize_cached(backend):
    bump = execg("with torch.no_grad(): model.parametrizations.weight.original.add_(1.0)")
    script = [*calls(2, fresh), Do(enter_cached, "enter cached()"), Call(fresh), bump]
    script += [Call(fresh), Do(leave_cached, "leave cached()"), Call(fresh)]
    run_case(Case("parametrize_cached", prog(PARAMETRIZED, "model"), script), backend)


READS_THE_WEIGHT = (
    PARAMETRIZED
    + """
def f(x):
    # The program reads the parametrized weight itself (the layer is not called).
    return x @ model.weight.t()
"""
)


@backends()
def test_a_parametrized_weight_read_inside_parametrize_cached(backend):
    bump = execg("with torch.no_grad(): model.parametrizations.weight.original.add_(1.0)")
    script = [*calls(2, fresh), Do(enter_cached, "enter cached()"), Call(fresh), bump]
    script += [Call(fresh), Do(leave_cached, "leave cached()"), Call(fresh)]
    run_case(Case("parametrized_weight_cached", prog(READS_THE_WEIGHT), script), backend)
