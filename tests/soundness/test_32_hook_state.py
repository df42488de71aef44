"""Class 32: state a forward hook reaches through itself.

Torch's ``Module._call_impl`` runs the hooks it finds in ``_forward_hooks`` /
``_forward_pre_hooks`` (dicts keyed by handle id) and the global ones; the
hook is user code, stepped into, but it was reached without a path, so what
it reads or writes through itself (closure cells, a bound method's
``__self__``, a callable object's attributes, a ``functools.partial``'s
arguments) had no source: its writes were left out of the mock (an
activation capture kept the first call's tensor on every replay) and its
reads were not guarded (a config changed between calls went unseen).  Each
hook now gets its slot, ``module._forward_hooks[<id>]``, as its source.
"""

from __future__ import annotations

import functools

import pytest
import torch
from harness import Call, Case, Do, Env, backends, calls, run_case


def x12(env):
    return torch.randn(3, 2)


def seq():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU(), torch.nn.Linear(2, 2))


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(2, 2)

    def forward(self, x):
        return torch.tanh(self.lin(x))


# -- closures -----------------------------------------------------------------------


def build_capture():
    model = seq()
    acts, cfg = {}, {"scale": 1.0}

    def hook(mod, inp, out):
        acts["lin"] = out.detach()  # activation capture
        return out * cfg["scale"]

    model[0].register_forward_hook(hook)
    return Env(target=model, acts=acts, cfg=cfg)


def set_scale(value):
    def action(env):
        env.cfg["scale"] = value

    action.__name__ = f"cfg['scale'] = {value}"
    return action


@backends(inductor=True)
def test_closure_dict_activation_capture(backend):
    run_case(
        Case("closure_dict_activation_capture", build_capture, calls(4, x12), min_hits=3), backend
    )


@backends()
def test_closure_config_changed_between_calls(backend):
    run_case(
        Case(
            "closure_config_changed_between_calls",
            build_capture,
            [*calls(2, x12), Do(set_scale(3.0)), *calls(2, x12), Do(set_scale(1.0)), Call(x12)],
            min_hits=3,
        ),
        backend,
    )


def build_counter_and_log(counter_kind):
    def build():
        model = seq()
        count, log = ({"n": 0} if counter_kind == "dict" else [0]), []
        key = "n" if counter_kind == "dict" else 0

        def hook(mod, inp, out):
            count[key] += 1
            log.append(out.detach() * 2)

        model[2].register_forward_hook(hook)
        return Env(target=model, count=count, log=log)

    return build


@backends()
def test_closure_counter_and_list_log(backend):
    run_case(
        Case(
            "closure_counter_and_list_log", build_counter_and_log("dict"), calls(5, x12), min_hits=3
        ),
        backend,
    )


@backends()
def test_closure_list_item_counter(backend):
    # cnt[0] += 1: correct; no replay expected (the mock renders a store into a list
    # item as a pop when the index is not among the list's values: a separate bug).
    run_case(
        Case("closure_list_item_counter", build_counter_and_log("list"), calls(4, x12)), backend
    )


# -- what a hook object carries -------------------------------------------------------


class Counter:
    def __init__(self):
        self.n = 0
        self.store = {}

    def __call__(self, mod, inp, out):
        self.n += 1
        self.store["last"] = out.detach()


def watch_counter(env):
    return {"n": env.counter.n, "store": dict(env.counter.store)}


@backends()
def test_callable_object_hook(backend):
    def build():
        model = seq()
        counter = Counter()
        model[0].register_forward_hook(counter)
        return Env(target=model, counter=counter)

    run_case(
        Case("callable_object_hook", build, calls(5, x12), watch=watch_counter, min_hits=3),
        backend,
    )


class Recorder:
    def __init__(self, gain):
        self.gain = gain
        self.outs = []
        self.calls = 0

    def hook(self, mod, inp, out):
        self.calls += 1
        self.outs.append(out.detach())
        return out * self.gain


def set_gain(value):
    def action(env):
        env.recorder.gain = value

    action.__name__ = f"recorder.gain = {value}"
    return action


@backends()
def test_bound_method_hook(backend):
    def build():
        model = seq()
        recorder = Recorder(1.0)
        model[0].register_forward_hook(recorder.hook)
        return Env(target=model, recorder=recorder)

    run_case(
        Case(
            "bound_method_hook",
            build,
            [*calls(4, x12), Do(set_gain(-2.0)), *calls(3, x12)],
            watch=lambda env: {"outs": list(env.recorder.outs), "calls": env.recorder.calls},
            min_hits=3,
        ),
        backend,
    )


def save_output(name, store, mod, inp, out):
    store[name] = out.detach()
    store["count"] += 1


def save_by_keyword(mod, inp, out, name=None, store=None):
    store[name] = out.detach() + 1


@backends()
def test_partial_hook(backend):
    def build():
        model = seq()
        store = {"count": 0}
        model[0].register_forward_hook(functools.partial(save_output, "lin0", store))
        model[2].register_forward_hook(functools.partial(save_by_keyword, name="lin2", store=store))
        return Env(target=model, store=store)

    run_case(Case("partial_hook", build, calls(5, x12), min_hits=3), backend)


# -- pre-hooks, the root module, global hooks --------------------------------------------


def build_pre_hook():
    model = seq()
    seen, cfg = [], {"gain": 1.0}

    def pre(mod, args):
        seen.append(args[0].detach())
        return (args[0] * cfg["gain"],)

    model[2].register_forward_pre_hook(pre)
    return Env(target=model, seen=seen, cfg=cfg)


def set_pre_gain(env):
    env.cfg["gain"] = 0.5


@backends()
def test_forward_pre_hook(backend):
    run_case(
        Case(
            "forward_pre_hook",
            build_pre_hook,
            [*calls(2, x12), Do(set_pre_gain, "cfg['gain'] = 0.5"), *calls(2, x12)],
            min_hits=2,
        ),
        backend,
    )


def build_root_hooks(module_kind):
    def build():
        torch.manual_seed(0)
        model = Block() if module_kind == "user" else seq()
        acts, cfg, inputs = {}, {"shift": 0.0}, []
        model.register_forward_pre_hook(lambda mod, args: inputs.append(args[0].detach() * 1))

        def hook(mod, inp, out):
            acts["out"] = out.detach()
            return out + cfg["shift"]

        model.register_forward_hook(hook)
        return Env(target=model, acts=acts, cfg=cfg, inputs=inputs)

    return build


def set_shift(env):
    env.cfg["shift"] = 5.0


@backends()
@pytest.mark.parametrize("kind", ["user", "library"])
def test_hooks_on_the_root_module(backend, kind):
    # "user": a module with its own forward; "library": an nn.Sequential.
    run_case(
        Case(
            f"hooks_on_the_root_module_{kind}",
            build_root_hooks(kind),
            [*calls(3, x12), Do(set_shift, "cfg['shift'] = 5"), *calls(2, x12)],
            min_hits=3,
        ),
        backend,
    )


@backends()
def test_hook_on_a_user_module_inside_a_sequential(backend):
    # Block's __call__ runs inside nn.Sequential's forward, unobserved.
    def build():
        torch.manual_seed(0)
        model = torch.nn.Sequential(Block(), torch.nn.ReLU())
        return Env(target=model, acts={}, handles=[])

    def add(env):
        def hook(mod, inp, out):
            env.acts["block"] = out.detach()
            return -out

        env.handles.append(env.target[0].register_forward_hook(hook))

    def remove(env):
        env.handles.pop().remove()

    run_case(
        Case(
            "hook_on_a_user_module_inside_a_sequential",
            build,
            [
                Call(x12),
                Do(add, "hook on model[0]"),
                *calls(3, x12),
                Do(remove, "remove it"),
                *calls(2, x12),
            ],
            watch=lambda env: dict(env.acts),
            min_hits=3,
        ),
        backend,
    )


@backends()
def test_same_hook_registered_again(backend):
    # Removed and registered again: the same function under a new handle id.
    def build():
        model = seq()
        acts = {}

        def hook(mod, inp, out):
            acts["lin"] = out.detach()

        handles = [model[0].register_forward_hook(hook)]
        return Env(target=model, acts=acts, hook=hook, handles=handles)

    def again(env):
        env.handles.pop().remove()
        env.handles.append(env.target[0].register_forward_hook(env.hook))

    def remove(env):
        env.handles.pop().remove()

    run_case(
        Case(
            "same_hook_registered_again",
            build,
            [
                *calls(2, x12),
                Do(again, "remove, register again"),
                *calls(2, x12),
                Do(remove, "remove it"),
                *calls(2, x12),
            ],
            min_hits=3,
        ),
        backend,
    )


@backends()
def test_global_forward_hook_with_closure_state(backend):
    def build():
        model = seq()
        log = []

        first = model[0]

        def hook(mod, inp, out):
            # Global hooks are the process's: each twin's hook runs in both twins.
            if mod is first:
                log.append(out.detach())

        return Env(target=model, log=log, hook=hook, handles=[])

    def add(env):
        env.handles.append(torch.nn.modules.module.register_module_forward_hook(env.hook))

    def remove(env):
        env.handles.pop().remove()

    try:
        run_case(
            Case(
                "global_forward_hook_with_closure_state",
                build,
                [Call(x12), Do(add, "register_module_forward_hook"), *calls(3, x12)]
                + [Do(remove, "remove it"), Call(x12)],
                min_hits=2,
            ),
            backend,
        )
    finally:
        torch.nn.modules.module._global_forward_hooks.clear()
