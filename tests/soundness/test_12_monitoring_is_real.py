"""Class 12: the monitoring run is the real program.

It must not set flags that change library behaviour: code that checks
``torch.compiler.is_compiling()`` (directly, or inside torch's optimizers and
utilities) must take the same path under monitoring as in eager.
"""

from __future__ import annotations

import torch
from harness import Call, Case, Env, backends, calls, load_program, run_case


def x3(env):
    return torch.randn(3)


COMPILING = """
import torch

def forward(x):
    if torch.compiler.is_compiling():
        return x * 0, "compiling"
    return x * 2, "eager"
"""


def build_is_compiling():
    ns = load_program(COMPILING, "is_compiling")
    return Env(ns=ns, target=ns.forward)


@backends()
def test_checks_is_compiling(backend):
    run_case(Case("checks_is_compiling", build_is_compiling, calls(3, x3)), backend)


DYNAMO_COMPILING = """
import torch
import torch._dynamo

def log_once(x, seen):
    if not torch._dynamo.is_compiling():
        seen.append(x.shape[0])
    return x + len(seen)
"""


def build_dynamo_compiling():
    ns = load_program(DYNAMO_COMPILING, "dynamo_compiling")
    return Env(ns=ns, target=ns.log_once, seen=[])


@backends()
def test_checks_dynamo_is_compiling(backend):
    run_case(
        Case(
            "checks_dynamo_is_compiling",
            build_dynamo_compiling,
            calls(3, lambda env: (torch.randn(2), env.seen)),
        ),
        backend,
    )


def make_optimizer_case(opt_factory):
    def build():
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 2)
        opt = opt_factory(model.parameters())
        data = []

        def step():
            # the backward runs in the call's argument builder; the compiled function is the step
            opt.step()
            opt.zero_grad()
            return sum(p.detach().sum() for p in model.parameters())

        return Env(target=step, model=model, opt=opt, data=data)

    return build


def with_grads(env):
    torch.manual_seed(9)
    env.model(torch.randn(3, 4)).pow(2).sum().backward()
    return ()


def opt_watch(env):
    state = {}
    for i, (p, st) in enumerate(env.opt.state.items()):
        state[i] = {k: v for k, v in st.items()}
    return {"params": [p.detach() for p in env.model.parameters()], "opt_state": state}


@backends()
def test_adam_step_compiled(backend):
    run_case(
        Case(
            "adam_step_compiled",
            make_optimizer_case(lambda ps: torch.optim.Adam(ps, lr=0.01)),
            [Call(with_grads), Call(with_grads), Call(with_grads), Call(with_grads)],
            watch=opt_watch,
        ),
        backend,
    )


@backends()
def test_sgd_momentum_step_compiled(backend):
    run_case(
        Case(
            "sgd_momentum_step_compiled",
            make_optimizer_case(lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9)),
            [Call(with_grads), Call(with_grads), Call(with_grads)],
            watch=opt_watch,
        ),
        backend,
    )


WARN_ONCE = """
import warnings
import torch

def forward(x):
    if not torch.compiler.is_compiling():
        warnings.warn("slow path")
    return x.cumsum(0)
"""


def build_warn_once():
    ns = load_program(WARN_ONCE, "warn_once")
    return Env(ns=ns, target=ns.forward)


@backends()
def test_warning_skipped_when_compiling(backend):
    run_case(
        Case(
            "warning_skipped_when_compiling", build_warn_once, calls(3, x3), compare_warnings=True
        ),
        backend,
    )
