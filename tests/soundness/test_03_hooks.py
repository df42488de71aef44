"""Class 3: hooks.

Forward, pre-forward and backward hooks checked by identity, not by count;
module-global hooks; effects made inside hooks replayed; tensor hooks
registered inside the function registered again on replay.
"""

from __future__ import annotations

import torch
from harness import Call, Case, Do, Env, backends, calls, run_case


def x24(env):
    return torch.randn(2, 4)


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.lin(x))


def build_block():
    torch.manual_seed(0)
    block = Block()
    return Env(target=block, handles={}, seen=[])


def add_scaling_hook(factor):
    def action(env):
        env.handles.setdefault("out", []).append(
            env.target.register_forward_hook(lambda mod, inp, out: out * factor)
        )

    action.__name__ = f"forward hook *{factor}"
    return action


def remove_hooks(env):
    for handle in env.handles.pop("out", []):
        handle.remove()


@backends(inductor=True)
def test_forward_hook_added_between_calls(backend):
    run_case(
        Case(
            "forward_hook_added_between_calls",
            build_block,
            [
                *calls(2, x24),
                Do(add_scaling_hook(3.0)),
                *calls(2, x24),
                Do(remove_hooks),
                Call(x24),
            ],
        ),
        backend,
    )


@backends()
def test_hook_swapped_same_count(backend):
    run_case(
        Case(
            "hook_swapped_same_count",
            build_block,
            [
                Do(add_scaling_hook(2.0)),
                *calls(2, x24),
                Do(remove_hooks),
                Do(add_scaling_hook(-1.0)),
                *calls(2, x24),
            ],
        ),
        backend,
    )


def add_pre_hook(env):
    def double_input(mod, args):
        return (args[0] * 2,)

    env.handles["pre"] = env.target.lin.register_forward_pre_hook(double_input)


def swap_pre_hook(env):
    env.handles.pop("pre").remove()

    def negate_input(mod, args):
        return (-args[0],)

    env.handles["pre"] = env.target.lin.register_forward_pre_hook(negate_input)


@backends()
def test_pre_hook_on_submodule_swapped(backend):
    run_case(
        Case(
            "pre_hook_on_submodule_swapped",
            build_block,
            [
                Call(x24),
                Do(add_pre_hook, "pre-hook on lin"),
                *calls(2, x24),
                Do(swap_pre_hook, "swap it"),
                *calls(2, x24),
            ],
        ),
        backend,
    )


def add_recording_hook(env):
    def record(mod, inp, out):
        env.seen.append(round(float(out.sum()), 4))

    env.handles["rec"] = env.target.register_forward_hook(record)


@backends()
def test_effects_inside_hook_replayed(backend):
    run_case(
        Case(
            "effects_inside_hook_replayed",
            build_block,
            [Do(add_recording_hook, "hook appending to a list"), *calls(4, x24)],
            watch=lambda env: {"seen": list(env.seen)},
        ),
        backend,
    )


def add_global_hook(env):
    def clamp(mod, inp, out):
        if isinstance(mod, torch.nn.Linear):
            return out.clamp(min=0.0)
        return None

    env.handles["global"] = torch.nn.modules.module.register_module_forward_hook(clamp)


def remove_global(env):
    env.handles.pop("global").remove()


@backends()
def test_module_global_forward_hook(backend):
    # A Linear inside a function (its output goes through tanh, so clamping shows).
    def build():
        torch.manual_seed(0)
        lin = torch.nn.Linear(4, 4)

        def f(x):
            return torch.tanh(lin(x))

        return Env(target=f, lin=lin, handles={})

    try:
        run_case(
            Case(
                "module_global_forward_hook",
                build,
                [
                    *calls(2, x24),
                    Do(add_global_hook, "register_module_forward_hook"),
                    *calls(2, x24),
                    Do(remove_global, "remove it"),
                    Call(x24),
                ],
            ),
            backend,
        )
    finally:
        torch.nn.modules.module._global_forward_hooks.clear()


class Tap(torch.nn.Module):
    """Keeps the gradient flowing into its input, for inspection."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.grads = []

    def forward(self, x):
        h = self.lin(x)
        h.register_hook(lambda g: self.grads.append(g.norm().item()))
        return h.sum()


def build_tap():
    torch.manual_seed(0)
    return Env(target=Tap())


def call_and_backward(env):
    torch.manual_seed(3)
    env.call(torch.randn(2, 3)).backward()


@backends()
def test_tensor_hook_registered_inside(backend):
    run_case(
        Case(
            "tensor_hook_registered_inside",
            build_tap,
            [
                Do(call_and_backward, "call + backward"),
                Do(call_and_backward, "call + backward"),
                Do(call_and_backward, "call + backward"),
                Call(lambda env: torch.randn(2, 3)),
            ],
            watch=lambda env: {
                "grads": list(env.target.grads),
                "w.grad": env.target.lin.weight.grad,
            },
        ),
        backend,
    )


def build_backward_hook_model():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1))
    return Env(target=model, handles={}, log=[])


def add_full_backward_hook(env):
    env.handles["b"] = env.target[0].register_full_backward_hook(
        lambda mod, gin, gout: env.log.append(round(gout[0].abs().sum().item(), 4))
    )


def step_with_backward(env):
    torch.manual_seed(5)
    env.call(torch.randn(4, 3)).sum().backward()


@backends()
def test_full_backward_hook_added_later(backend):
    run_case(
        Case(
            "full_backward_hook_added_later",
            build_backward_hook_model,
            [
                Do(step_with_backward, "forward+backward"),
                Do(step_with_backward, "forward+backward"),
                Do(add_full_backward_hook, "register_full_backward_hook"),
                Do(step_with_backward, "forward+backward"),
                Do(step_with_backward, "forward+backward"),
                Call(lambda env: torch.randn(4, 3)),
            ],
            watch=lambda env: {
                "log": list(env.log),
                "grads": [p.grad for p in env.target.parameters()],
            },
        ),
        backend,
    )
