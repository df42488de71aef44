"""Class 2: autograd inside the compiled function.

A training step (``zero_grad``, forward, ``loss.backward()``,
``optimizer.step()``), ``torch.autograd.grad``, reading ``.grad``,
``torch.no_grad()`` updates of parameters, outputs that keep
``requires_grad``, gradient accumulation, grad mode restored after a failing
call.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from harness import Call, Case, Do, Env, backends, calls, load_program, program_env, run_case


def batch(env):
    return torch.randn(5, 4), torch.randint(0, 3, (5,))


def build_sgd_step():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def train_step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    return Env(model=model, opt=opt, target=train_step)


@backends(
    inductor=True,
)
def test_sgd_training_step(backend):
    run_case(Case("sgd_training_step", build_sgd_step, calls(4, batch)), backend)


def build_scheduled_step(read_lr: bool):
    def build():
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 3)
        opt = torch.optim.SGD(model.parameters(), lr=0.4)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)

        def train_step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            sched.step()
            if read_lr:  # the scheduler changed it: this call's value, not the first one's
                return loss.detach() * opt.param_groups[0]["lr"]
            return loss.detach()

        return Env(model=model, opt=opt, target=train_step)

    return build


@backends()
def test_scheduler_step_replays(backend):
    run_case(
        Case("scheduler_step_replays", build_scheduled_step(False), calls(5, batch), min_hits=4),
        backend,
    )


@backends()
def test_learning_rate_read_after_scheduler_step(backend):
    run_case(
        Case("lr_read_after_scheduler_step", build_scheduled_step(True), calls(5, batch)),
        backend,
    )


def build_accumulating():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)

    def accumulate(x, y):  # no zero_grad: gradients accumulate across calls
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        return loss.item()

    return Env(model=model, target=accumulate)


@backends()
def test_gradient_accumulation(backend):
    run_case(Case("gradient_accumulation", build_accumulating, calls(4, batch)), backend)


MANUAL_SGD = """
import torch

torch.manual_seed(0)
w = torch.randn(4, 1, requires_grad=True)
lr = 0.05

def fit(x, y):
    pred = x @ w
    loss = ((pred - y) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        w.sub_(lr * w.grad)
        w.grad.zero_()
    return loss.detach()
"""


def build_manual_sgd():
    ns = load_program(MANUAL_SGD, "manual_sgd")
    return Env(ns=ns, target=ns.fit)


@backends()
def test_manual_sgd_with_no_grad_update(backend):
    run_case(
        Case(
            "manual_sgd_with_no_grad_update",
            build_manual_sgd,
            [
                *calls(3, lambda env: (torch.randn(6, 4), torch.randn(6, 1))),
                Do(lambda env: setattr(env.ns, "lr", 0.5), "lr = 0.5"),
                *calls(2, lambda env: (torch.randn(6, 4), torch.randn(6, 1))),
            ],
        ),
        backend,
    )


def build_autograd_grad():
    def input_gradient(x):
        x = x.detach().requires_grad_(True)
        energy = (x.sin() * x).sum()
        (grad,) = torch.autograd.grad(energy, x)
        return grad

    return Env(target=input_gradient)


@backends(inductor=True)
def test_autograd_grad_inside(backend):
    run_case(
        Case("autograd_grad_inside", build_autograd_grad, calls(3, lambda env: torch.randn(5))),
        backend,
    )


def build_read_grad():
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)

    def grad_norm():
        total = 0.0
        for p in model.parameters():
            if p.grad is not None:
                total = total + p.grad.pow(2).sum()
        return total

    return Env(model=model, target=grad_norm)


def backward_once(env):
    env.model(torch.randn(4, 3)).sum().backward()


@backends()
def test_reads_grad_that_changes(backend):
    run_case(
        Case(
            "reads_grad_that_changes",
            build_read_grad,
            [
                Call(label="no grads yet"),
                Call(),
                Do(backward_once, "backward outside"),
                Call(),
                Do(backward_once, "backward again (grads accumulate)"),
                Call(),
                Do(lambda env: env.model.zero_grad(set_to_none=True), "zero_grad"),
                Call(),
            ],
        ),
        backend,
    )


class Tied(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(3, 3, bias=False)

    def forward(self, x):
        with torch.no_grad():
            self.proj.weight.mul_(0.5)
        return x @ self.proj.weight


def build_tied():
    torch.manual_seed(0)
    return Env(target=Tied())


@backends()
def test_no_grad_parameter_update_in_forward(backend):
    run_case(
        Case(
            "no_grad_parameter_update_in_forward",
            build_tied,
            calls(3, lambda env: torch.randn(2, 3)),
        ),
        backend,
    )


class Classifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(4, 4)
        self.head = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.head(torch.relu(self.body(x)))


def build_outer_backward():
    torch.manual_seed(0)
    model = Classifier()
    return Env(model=model, target=model, outputs=[])


def outer_step(env):
    # The user's loop does the backward on the compiled forward's output.
    torch.manual_seed(7)
    out = env.call(torch.randn(3, 4))
    out.square().mean().backward()


@backends(inductor=True)
def test_backward_on_compiled_output(backend):
    run_case(
        Case(
            "backward_on_compiled_output",
            build_outer_backward,
            [
                Do(outer_step, "forward+backward"),
                Call(lambda env: torch.randn(3, 4)),
                Do(outer_step, "forward+backward"),
                Do(outer_step, "forward+backward"),
                Call(lambda env: torch.randn(3, 4)),
            ],
        ),
        backend,
    )


GUARDED_EVAL = """
import torch

class Scorer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 1)

    def forward(self, x):
        with torch.no_grad():
            score = self.lin(x)
            if score.isnan().any():
                raise ValueError("nan score")
        return score
"""


def build_guarded_eval():
    torch.manual_seed(0)
    ns = load_program(GUARDED_EVAL, "guarded_eval")
    return Env(ns=ns, target=ns.Scorer())


@backends()
def test_grad_mode_restored_after_raise(backend):
    run_case(
        Case(
            "grad_mode_restored_after_raise",
            build_guarded_eval,
            [
                *calls(2, lambda env: torch.randn(2, 4)),
                Call(
                    lambda env: torch.full((2, 4), float("nan")),
                    label="nan input raises inside no_grad",
                ),
                Call(lambda env: torch.randn(2, 4)),
            ],
        ),
        backend,
    )


def build_detach_toggle():
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 3)

    def forward(x):
        return model(x) * 2

    return Env(model=model, target=forward)


def freeze(env):
    for p in env.model.parameters():
        p.requires_grad_(False)


@backends()
def test_parameters_frozen_between_calls(backend):
    run_case(
        Case(
            "parameters_frozen_between_calls",
            build_detach_toggle,
            [
                *calls(2, lambda env: torch.randn(2, 3)),
                Do(freeze, "requires_grad_(False)"),
                *calls(2, lambda env: torch.randn(2, 3)),
            ],
        ),
        backend,
    )


@backends()
def test_called_under_no_grad_then_with_grad(backend):
    run_case(
        Case(
            "called_under_no_grad_then_with_grad",
            build_detach_toggle,
            [
                Call(lambda env: torch.randn(2, 3)),
                Call(
                    lambda env: torch.randn(2, 3),
                    context=lambda env: torch.no_grad(),
                    label="under no_grad",
                ),
                Call(lambda env: torch.randn(2, 3)),
                Do(lambda env: torch.set_grad_enabled(False), "set_grad_enabled(False)"),
                Call(lambda env: torch.randn(2, 3)),
                Call(
                    lambda env: torch.randn(2, 3),
                    context=lambda env: torch.enable_grad(),
                    label="enable_grad",
                ),
            ],
        ),
        backend,
    )


LEGACY_VARIABLE = """
import torch
from torch.autograd import Variable

w = torch.nn.Parameter(torch.ones(3))

def step(x):
    h = x * w
    frozen = Variable(h * 2)      # the legacy wrapper: no gradient flows through it
    loss = (h * frozen).sum()
    loss.backward()
    return loss, frozen.requires_grad
"""


def test_legacy_variable_cuts_the_gradient():
    def zero_grad(env):
        env.ns.w.grad = None

    run_case(
        Case(
            "legacy_variable",
            lambda: program_env(LEGACY_VARIABLE, "step"),
            [
                *calls(3, lambda env: (torch.randn(3),)),
                Do(zero_grad, "w.grad = None"),
                *calls(2, lambda env: (torch.randn(3),)),
            ],
            watch=lambda env: env.ns.w.grad,
            min_hits=2,
        ),
        "eager",
    )


CUSTOM_FUNCTION = """
import torch

GAIN = 3.0

class StraightThrough(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        ctx.k = k
        return (x * GAIN).round()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * ctx.k + x * 0, None   # the user's gradient, not round()'s zero

w = torch.nn.Parameter(torch.ones(4, 4))

def step(x):
    out = StraightThrough.apply(x @ w, 2.0)
    loss = out.sum() + (x @ w).pow(2).mean()   # a replay that lost the backward still runs
    loss.backward()
    return loss.detach(), out.requires_grad
"""


@backends(inductor=True)
def test_custom_autograd_function_keeps_its_backward(backend):
    def zero_grad(env):
        env.ns.w.grad = None

    def gain(env):
        env.ns.GAIN = 5.0  # read inside forward: the replayed call reads it again

    run_case(
        Case(
            "custom_function_backward",
            lambda: program_env(CUSTOM_FUNCTION, "step"),
            [
                *calls(3, lambda env: (torch.randn(2, 4),)),
                Do(zero_grad, "w.grad = None"),
                Do(gain, "GAIN = 5"),
                *calls(2, lambda env: (torch.randn(2, 4),)),
            ],
            watch=lambda env: env.ns.w.grad,
            min_hits=3,
        ),
        backend,
    )


CUSTOM_FUNCTION_INFERENCE = """
import torch

class Clip(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clamp(-1, 1)

    @staticmethod
    def backward(ctx, grad):
        return grad

w = torch.nn.Parameter(torch.linspace(-1.0, 1.0, 16).reshape(4, 4))

def predict(x):
    return Clip.apply(x @ w)
"""


def test_custom_autograd_function_without_grad_is_in_the_graph():
    run_case(
        Case(
            "custom_function_inference",
            lambda: program_env(CUSTOM_FUNCTION_INFERENCE, "predict"),
            [
                *calls(3, lambda env: (torch.randn(2, 4),), context=lambda env: torch.no_grad()),
                *calls(2, lambda env: (torch.randn(2, 4),)),  # with grad: its backward counts
                *calls(2, lambda env: (torch.randn(2, 4),), context=lambda env: torch.no_grad()),
            ],
            min_hits=4,
        ),
        "eager",
    )
