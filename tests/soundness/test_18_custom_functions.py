"""Class 18: custom ``torch.autograd.Function`` calls captured into the graph.

``MyFunction.apply(x)`` while ``x`` requires grad becomes one graph node whose
backward is the user's (capture/custom_functions.py).  Each case compares a
fresh eager twin with the compiled one over several calls with fresh data:
outputs, the gradients the user's backward gives (``.grad`` of the
parameters, watched after ``loss.backward()`` run inside the function or
right after it), printed output and RNG state; state changes between calls
(a global the forward reads, the class's backward replaced, an input that
stops requiring grad).  Programs whose Function can't be captured (an effect
in backward, ``ctx.mark_dirty``, ``.item()`` in forward) must still be right
on every call, including the first, where the capture was tried and given up.
"""

from __future__ import annotations

import pytest
import torch
from harness import Call, Case, Do, backends, calls, program_env, run_case

import fullgraph.runtime as fr
from fullgraph.runtime import torch_internals

STRAIGHT_THROUGH = """
import torch

torch.manual_seed(0)  # both twins build the same parameters

GAIN = 3.0

class RoundST(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        ctx.k = k
        return (x * GAIN).round()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * ctx.k + x * 0, None   # the user's gradient, not round()'s zero

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        return RoundST.apply(self.fc(x), 2.0).pow(2).mean()
"""


def _zero_w_grad(env):
    env.ns.w.grad = None


def _w_grad_case(name, source, target, shape, *, watch=None, between=(), after=2, **options):
    """Three training steps, ``w.grad = None`` (and ``between``), ``after`` more steps on
    fresh inputs of ``shape``; ``w.grad`` is compared after each unless ``watch`` says."""
    steps = [
        *calls(3, lambda env: (torch.randn(*shape),)),
        Do(_zero_w_grad, "w.grad = None"),
        *between,
        *calls(after, lambda env: (torch.randn(*shape),)),
    ]
    return Case(
        name,
        lambda: program_env(source, target),
        steps,
        watch=watch or (lambda env: env.ns.w.grad),
        **options,
    )


def _backward(env, loss):
    loss.backward()


def _zero_grad(env):
    env.target.zero_grad(set_to_none=True)


@backends(inductor=True)
def test_straight_through_backward_outside_the_function(backend):
    """The compiled forward's loss, backward by the caller: the user's gradient."""

    def gain(env):
        env.ns.GAIN = 5.0  # read inside forward: another record

    run_case(
        Case(
            "straight_through",
            lambda: program_env(STRAIGHT_THROUGH + "\nnet = Net()\n", "net"),
            [
                *[Call(lambda env: (torch.randn(3, 4),), then=_backward) for _ in range(3)],
                Do(_zero_grad, "zero_grad"),
                Do(gain, "GAIN = 5"),
                *[Call(lambda env: (torch.randn(3, 4),), then=_backward) for _ in range(2)],
            ],
            min_hits=3,
            max_monitor_runs=2,
        ),
        backend,
    )


def test_straight_through_is_one_graph():
    ns = program_env(STRAIGHT_THROUGH + "\nnet = Net()\n", "net").ns
    report = fr.explain(ns.net, torch.randn(3, 4))
    assert report.status == "ok"
    assert len(report.graphs) == 1, report.graphs
    assert not report.breaks
    assert "autograd_function_apply" in report.graphs[0]["code"]


TRAINING_STEP = """
import torch

torch.manual_seed(0)  # both twins build the same parameters

class ScaleGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.scale, None

model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)

def step(x, y):
    opt.zero_grad()
    h = ScaleGrad.apply(model(x), 0.5)
    loss = torch.nn.functional.mse_loss(h, y)
    loss.backward()
    opt.step()
    return loss.detach()
"""


@backends()
def test_training_step_with_the_function_inside(backend):
    """A whole training step: the optimizer moves by the user's (halved) gradient."""
    run_case(
        Case(
            "training_step",
            lambda: program_env(TRAINING_STEP, "step"),
            calls(5, lambda env: (torch.randn(6, 4), torch.randn(6, 1))),
            watch=lambda env: [p.detach().clone() for p in env.ns.model.parameters()],
            min_hits=3,
        ),
        backend,
    )


SETUP_CONTEXT = """
import torch

torch.manual_seed(0)  # both twins build the same parameters

class MulAdd(torch.autograd.Function):
    @staticmethod
    def forward(x, y, alpha):
        return x * y + alpha, (x * y).sum(-1)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, y, alpha = inputs
        ctx.save_for_backward(x, y)
        ctx.mark_non_differentiable(output[1])

    @staticmethod
    def backward(ctx, grad, grad_sum):
        x, y = ctx.saved_tensors
        gx = grad * y if ctx.needs_input_grad[0] else None
        gy = grad * x if ctx.needs_input_grad[1] else None
        return gx, gy, None

w = torch.nn.Parameter(torch.randn(3, 4))

def step(x):
    out, total = MulAdd.apply(w, x, 1.0)
    loss = out.pow(2).sum()
    loss.backward()
    return loss.detach(), total, total.requires_grad
"""


@backends()
def test_setup_context_style_with_a_non_differentiable_output(backend):
    run_case(_w_grad_case("setup_context", SETUP_CONTEXT, "step", (3, 4), min_hits=3), backend)


NEEDS_INPUT_GRAD = """
import torch

torch.manual_seed(0)  # both twins build the same parameters

class Linear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight):
        ctx.save_for_backward(x, weight)
        return x @ weight.t()

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        grad_x = grad_w = None
        if ctx.needs_input_grad[0]:
            grad_x = grad @ weight
        if ctx.needs_input_grad[1]:
            grad_w = grad.t() @ x
        return grad_x, grad_w

weight = torch.nn.Parameter(torch.randn(5, 4))

def forward(x):
    return Linear.apply(x, weight).tanh().sum()
"""


def _input_grad_backward(env, loss):
    loss.backward()
    env.ns.seen_grads = [None if t.grad is None else t.grad.clone() for t in env.ns.inputs]


@backends()
def test_needs_input_grad_follows_the_inputs(backend):
    """Which inputs require grad decides the backward's branches: another record."""

    def make(requires):
        def args(env):
            x = torch.randn(2, 4, requires_grad=requires)
            env.ns.inputs = [x]
            return (x,)

        return args

    def stop_weight_grad(env):
        env.ns.weight.requires_grad_(False)

    run_case(
        Case(
            "needs_input_grad",
            lambda: program_env(NEEDS_INPUT_GRAD, "forward"),
            [
                *[Call(make(False), then=_input_grad_backward) for _ in range(2)],
                *[Call(make(True), then=_input_grad_backward) for _ in range(2)],
                Do(stop_weight_grad, "weight.requires_grad_(False)"),
                *[Call(make(True), then=_input_grad_backward) for _ in range(2)],
            ],
            watch=lambda env: (env.ns.weight.grad, getattr(env.ns, "seen_grads", None)),
            min_hits=3,
        ),
        backend,
    )


GRAD_REVERSE = """
import torch

torch.manual_seed(0)  # both twins build the same parameters

class GradReverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, alpha):
        ctx.alpha = alpha
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.neg() * ctx.alpha, None

class DANN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.features = torch.nn.Linear(4, 6)
        self.domain = torch.nn.Linear(6, 2)

    def forward(self, x, alpha):
        f = torch.relu(self.features(x))
        return self.domain(GradReverse.apply(f, alpha)).logsumexp(-1).mean()
"""


@backends()
def test_gradient_reversal_with_a_changing_alpha(backend):
    """DANN's gradient reversal: alpha changes every few steps (guarded by value)."""
    run_case(
        Case(
            "grad_reverse",
            lambda: program_env(GRAD_REVERSE + "\nnet = DANN()\n", "net"),
            [
                *[Call(lambda env: (torch.randn(5, 4), 0.1), then=_backward) for _ in range(3)],
                *[Call(lambda env: (torch.randn(5, 4), 0.7), then=_backward) for _ in range(3)],
            ],
            min_hits=2,
        ),
        backend,
    )


TWICE_AND_CLOSED_OVER = """
import torch

from torch.autograd.function import once_differentiable

torch.manual_seed(0)  # both twins build the same parameters

bias = torch.nn.Parameter(torch.randn(4))   # read inside forward: no gradient, as in eager

class Product(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b + bias

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return grad * b, grad * a

w = torch.nn.Parameter(torch.randn(4))

def step(x):
    y = Product.apply(w * x, w * x)      # the same tensor twice: both gradients count
    loss = y.sum()
    loss.backward()
    return loss.detach()
"""


@backends()
def test_same_tensor_twice_and_a_closed_over_parameter(backend):
    run_case(
        _w_grad_case(
            "twice_closed_over",
            TWICE_AND_CLOSED_OVER,
            "step",
            (4,),
            watch=lambda env: (env.ns.w.grad, env.ns.bias.grad),
            min_hits=3,
        ),
        backend,
    )


RANDOM_FORWARD = """
import torch

torch.manual_seed(0)  # both twins build the same parameters

class NoisyIdentity(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        mask = (torch.rand_like(x) > 0.3).to(x.dtype)
        ctx.save_for_backward(mask)
        return x * mask

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        return grad * mask

w = torch.nn.Parameter(torch.ones(6))

def step(x):
    out = NoisyIdentity.apply(w * x)
    out.sum().backward()
    return out.detach()
"""


@backends()
def test_random_forward_draws_what_eager_draws(backend):
    """The capture runs forward twice (captured, then as the operator): the RNG is put
    back in between, so the first call's mask and RNG state are eager's."""

    run_case(_w_grad_case("random_forward", RANDOM_FORWARD, "step", (6,), min_hits=3), backend)


REPLACED_BACKWARD = """
import torch

torch.manual_seed(0)  # both twins build the same parameters

class Clip(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clamp(-1, 1)

    @staticmethod
    def backward(ctx, grad):
        return grad

w = torch.nn.Parameter(torch.linspace(-2.0, 2.0, 8))

def step(x):
    loss = Clip.apply(w * x).sum()
    loss.backward()
    return loss.detach()

def doubled(ctx, grad):
    return grad * 2
"""


@backends()
def test_backward_replaced_on_the_class(backend):
    def replace(env):
        env.ns.Clip.backward = staticmethod(env.ns.doubled)

    run_case(
        _w_grad_case(
            "replaced_backward",
            REPLACED_BACKWARD,
            "step",
            (8,),
            between=[Do(replace, "Clip.backward = doubled")],
            after=3,
            min_hits=3,
        ),
        backend,
    )


# -- Functions that can't be captured: right on every call, the first included -----

EFFECT_IN_BACKWARD = """
import torch

torch.manual_seed(0)  # both twins build the same parameters

LOG = []

class Traced(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        print("backward", tuple(grad.shape))
        LOG.append(float(grad.sum()))
        return grad * 2

w = torch.nn.Parameter(torch.ones(3))

def forward(x):
    return Traced.apply(w * x).sum()
"""


@backends()
def test_backward_with_effects_is_not_run_early(backend):
    """Backward prints and appends: run early (to capture it) those effects would
    happen at the wrong time, so none happens and the call is replayed instead."""
    run_case(
        Case(
            "effect_in_backward",
            lambda: program_env(EFFECT_IN_BACKWARD, "forward"),
            [
                Call(lambda env: (torch.randn(3),)),  # no backward: nothing may print
                *[Call(lambda env: (torch.randn(3),), then=_backward) for _ in range(4)],
            ],
            watch=lambda env: (list(env.ns.LOG), env.ns.w.grad),
            min_hits=2,
        ),
        backend,
    )


GLOBAL_STORE_IN_BACKWARD = """
import torch

torch.manual_seed(0)  # both twins build the same parameters

calls = 0

class Counted(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.sin()

    @staticmethod
    def backward(ctx, grad):
        global calls
        calls += 1
        try:
            print("never mind")
        except Exception:
            pass
        return grad

w = torch.nn.Parameter(torch.ones(3))

def forward(x):
    return Counted.apply(w * x).sum()
"""


@backends()
def test_backward_storing_a_global_is_not_run_early(backend):
    run_case(
        Case(
            "global_store_in_backward",
            lambda: program_env(GLOBAL_STORE_IN_BACKWARD, "forward"),
            [
                *calls(2, lambda env: (torch.randn(3),)),
                *[Call(lambda env: (torch.randn(3),), then=_backward) for _ in range(3)],
            ],
            watch=lambda env: (env.ns.calls, env.ns.w.grad),
            min_hits=2,
        ),
        backend,
    )


MARK_DIRTY = """
import torch

torch.manual_seed(0)  # both twins build the same parameters

class AddOne_(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.add_(1)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad * 3

w = torch.nn.Parameter(torch.ones(4))

def step(x):
    h = w * x
    out = AddOne_.apply(h)
    loss = (out * h).sum()
    loss.backward()
    return loss.detach(), h.detach()
"""

ITEM_IN_FORWARD = """
import torch

torch.manual_seed(0)  # both twins build the same parameters

class Normalize(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        scale = x.abs().max().item()
        ctx.scale = scale
        return x / scale

    @staticmethod
    def backward(ctx, grad):
        return grad / ctx.scale

w = torch.nn.Parameter(torch.ones(5))

def step(x):
    loss = Normalize.apply(w * x).pow(2).sum()
    loss.backward()
    return loss.detach()
"""

WRONG_GRADIENT_COUNT = """
import torch

torch.manual_seed(0)  # both twins build the same parameters

class Broken(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        return x + y

    @staticmethod
    def backward(ctx, grad):
        return grad

w = torch.nn.Parameter(torch.ones(2))

def forward(x):
    return Broken.apply(w, x).sum()
"""


@backends(inductor=True)
def test_mark_dirty_updates_the_input_as_eager_does(backend):
    """One graph where torch's operator takes ``dirty_idx`` (2.13), replayed between
    graphs otherwise: either way the input is updated once and gradients are the user's."""

    run_case(_w_grad_case("mark_dirty", MARK_DIRTY, "step", (4,), min_hits=2), backend)


@backends()
def test_item_in_forward_runs_as_eager(backend):
    run_case(_w_grad_case("item_in_forward", ITEM_IN_FORWARD, "step", (5,)), backend)


@backends()
def test_wrong_gradient_count_raises_at_backward_as_in_eager(backend):
    """The user's own error, when (and only when) gradients flow back."""
    run_case(
        Case(
            "wrong_gradient_count",
            lambda: program_env(WRONG_GRADIENT_COUNT, "forward"),
            [
                Call(lambda env: (torch.randn(2),)),
                *[Call(lambda env: (torch.randn(2),), then=_backward) for _ in range(3)],
            ],
        ),
        backend,
    )


ACCUMULATE_IN_BACKWARD = """
import torch

grad_sums = torch.zeros(3)

class Tracked(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        grad_sums.add_(grad)          # an in-place update of a tensor from outside
        return grad * 2

w = torch.nn.Parameter(torch.ones(3))

def forward(x):
    return Tracked.apply(w * x).sum()
"""


@backends()
def test_backward_updating_an_outside_tensor_is_not_run_early(backend):
    run_case(
        Case(
            "accumulate_in_backward",
            lambda: program_env(ACCUMULATE_IN_BACKWARD, "forward"),
            [
                Call(lambda env: (torch.randn(3),)),
                *[Call(lambda env: (torch.randn(3),), then=_backward) for _ in range(3)],
            ],
            watch=lambda env: (env.ns.grad_sums, env.ns.w.grad),
            min_hits=1,
        ),
        backend,
    )


def test_a_capture_given_up_says_why_and_the_next_run_replays_the_call():
    ns = program_env(EFFECT_IN_BACKWARD, "forward").ns
    compiled = fr.compile(ns.forward, backend="eager")
    compiled(torch.randn(3))
    stats = compiled.stats
    assert stats.records == 0 and "backward calls builtins.print" in stats.unrecorded_reason
    for _ in range(3):
        compiled(torch.randn(3)).backward()
    assert compiled.stats.records == 1 and compiled.stats.hits == 2
    assert ns.LOG and len(ns.LOG) == 3  # the three backwards, none from the capture
    report = fr.explain(ns.forward, torch.randn(3))
    assert [b.category.code for b in report.breaks] == ["FG209"]


@pytest.mark.skipif(
    not torch_internals.autograd_function_apply_marks_dirty(),
    reason="this torch's autograd_function_apply has no dirty_idx",
)
def test_mark_dirty_is_one_graph():
    ns = program_env(MARK_DIRTY, "step").ns
    report = fr.explain(ns.step, torch.randn(4))
    assert [b.category.code for b in report.breaks] == ["FG208"]  # only loss.backward()
    assert "dirty_idx = [0]" in report.graphs[0]["code"]


TWO_CALLS_AND_A_MODULE = """
import torch

torch.manual_seed(0)

class Swish(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        s = torch.sigmoid(x)
        ctx.save_for_backward(x, s)
        return x * s

    @staticmethod
    def backward(ctx, grad):
        x, s = ctx.saved_tensors
        return grad * (s * (1 + x * (1 - s)))

class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(4, 8)
        self.b = torch.nn.Linear(8, 4)

    def forward(self, x):
        h = Swish.apply(self.a(x))
        return Swish.apply(self.b(h)) + x      # the same Function twice in one graph
"""


@backends(inductor=True)
def test_the_same_function_twice_in_a_module(backend):
    run_case(
        Case(
            "two_calls_module",
            lambda: program_env(TWO_CALLS_AND_A_MODULE + "\nnet = Block()\n", "net"),
            [
                *[
                    Call(lambda env: (torch.randn(3, 4),), then=lambda env, y: y.sum().backward())
                    for _ in range(3)
                ],
                Call(lambda env: (torch.randn(3, 4),), context=lambda env: torch.no_grad()),
                Call(lambda env: (torch.randn(3, 4),), then=lambda env, y: y.sum().backward()),
            ],
            min_hits=2,
        ),
        backend,
    )


HOOK_IN_BACKWARD = """
import torch

SEEN = []

class Hooked(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight):
        ctx.save_for_backward(x, weight)
        return x * weight

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        # From this backward on, every gradient of weight is logged (one hook more each time).
        weight.register_hook(lambda g: SEEN.append(round(float(g.sum()), 4)))
        return grad * weight, grad * x

w = torch.nn.Parameter(torch.ones(3))

def forward(x):
    return Hooked.apply(x, w).sum()
"""


@backends()
def test_backward_registering_a_hook_is_not_run_early(backend):
    """A hook registered in backward must not exist before the first backward."""
    run_case(
        Case(
            "hook_in_backward",
            lambda: program_env(HOOK_IN_BACKWARD, "forward"),
            [
                Call(lambda env: (torch.randn(3),)),
                *[Call(lambda env: (torch.randn(3),), then=_backward) for _ in range(3)],
            ],
            watch=lambda env: (list(env.ns.SEEN), env.ns.w.grad),
        ),
        backend,
    )
