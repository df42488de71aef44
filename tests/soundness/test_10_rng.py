"""Class 10: RNG parity, with Inductor too.

Random ops (dropout, ``torch.rand``, ``bernoulli``, ``randperm``) give the
numbers eager gives under the same seed and leave the same RNG state (the
harness seeds both twins identically before every call and compares
``torch.get_rng_state()`` after it).  Python's ``random`` too.
"""

from __future__ import annotations

import torch
from harness import Call, Case, Do, Env, backends, calls, load_program, program_env, run_case


def x(env):
    return torch.ones(4, 8)


class Noisy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
        self.drop = torch.nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.lin(x))


def build_dropout():
    torch.manual_seed(0)
    return Env(target=Noisy())


@backends(
    inductor=True,
)
def test_dropout_training(backend):
    run_case(
        Case(
            "dropout_training",
            build_dropout,
            [
                *calls(3, x),
                Do(lambda env: env.target.eval(), "eval()"),
                *calls(2, x),
                Do(lambda env: env.target.train(), "train()"),
                Call(x),
            ],
        ),
        backend,
    )


def build_rand():
    def jitter(x):
        noise = torch.rand_like(x) * 0.1
        return x + noise + torch.randn(x.shape[-1])

    return Env(target=jitter)


@backends(
    inductor=True,
)
def test_rand_under_same_seed(backend):
    run_case(Case("rand_under_same_seed", build_rand, calls(3, x)), backend)


def build_bernoulli():
    def mask_tokens(tokens, p):
        mask = torch.bernoulli(torch.full(tokens.shape, p)).bool()
        order = torch.randperm(tokens.shape[0])
        return tokens.masked_fill(mask, 0)[order]

    return Env(target=mask_tokens)


@backends(
    inductor=True,
)
def test_bernoulli_and_randperm(backend):
    run_case(
        Case(
            "bernoulli_and_randperm",
            build_bernoulli,
            [
                Call(lambda env: (torch.arange(1, 9), 0.3)),
                Call(lambda env: (torch.arange(1, 9), 0.3)),
                Call(lambda env: (torch.arange(1, 9), 0.6), label="p=0.6"),
            ],
        ),
        backend,
    )


PY_RANDOM = """
import random
import torch

def augment(x):
    if random.random() < 0.5:
        x = x.flip(-1)
    shift = random.randint(0, 3)
    return torch.roll(x, shift, dims=-1) + torch.rand(1)
"""


def build_py_random():
    ns = load_program(PY_RANDOM, "py_random")
    return Env(ns=ns, target=ns.augment)


@backends()
def test_python_random_decides_branch(backend):
    # a different seed per call: both branches and several shifts are taken
    run_case(
        Case(
            "python_random_decides_branch", build_py_random, calls(6, lambda env: torch.arange(8.0))
        ),
        backend,
    )


LAYER_DROP = """
import random
import torch

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x):
        for layer in self.layers:
            if random.random() < 0.5:  # LayerDrop: each layer kept or skipped
                continue
            x = x + layer(x)
        return x

net = Net()
"""


def build_layer_drop():
    torch.manual_seed(0)
    ns = load_program(LAYER_DROP, "layer_drop")
    return Env(ns=ns, target=ns.net)


@backends()
def test_python_random_decides_several_branches(backend):
    # several records, each missing after its own draws: a replay that misses after
    # reusing the draws of the one before and drawing more hands all of them on, so
    # the monitoring run that follows draws none of them again
    run_case(
        Case(
            "python_random_decides_several_branches",
            build_layer_drop,
            calls(8, lambda env: torch.ones(1, 4)),
        ),
        backend,
    )


def build_manual_seed_inside():
    def reproducible(x):
        torch.manual_seed(42)
        return x * torch.rand(x.shape)

    return Env(target=reproducible)


@backends(inductor=True)
def test_manual_seed_inside_function(backend):
    run_case(Case("manual_seed_inside_function", build_manual_seed_inside, calls(3, x)), backend)


NOISE_THEN_INT = """
import torch

def noisy_count(x):
    noise = torch.rand(3)
    total = (x * noise).sum()
    return int(total * 10), noise    # int() of NaN raises ValueError
"""


@backends(inductor=True)
def test_replay_that_raises_after_drawing_draws_once(backend):
    # The replay draws in its graph, then int(NaN) raises in the replayed read; the
    # program is run again to raise at its own line, and must not draw a second time.
    def finite(env):
        return (torch.ones(3),)

    def nan(env):
        return (torch.full((3,), float("nan")),)

    run_case(
        Case(
            "noise_then_int_raises",
            lambda: program_env(NOISE_THEN_INT, "noisy_count"),
            [*calls(2, finite), Call(nan), *calls(2, finite), Call(nan), Call(finite)],
        ),
        backend,
    )


EXPLICIT_GENERATORS = """
import torch

gen = torch.Generator().manual_seed(1)

class Noise(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.gen = torch.Generator().manual_seed(2)

    def forward(self, x):
        return x + torch.randn(x.shape, generator=self.gen)

noise = Noise()

def f(x, g):
    kept = torch.bernoulli(torch.full_like(x, 0.5), generator=g) * x
    return noise(kept) + torch.rand(x.shape, generator=gen)

def reseeded(x, g):
    g.manual_seed(3)
    return x + torch.randn(x.shape, generator=g)
"""


def _generators(env):
    return {
        "gen": env.ns.gen.get_state(),
        "noise": env.ns.noise.gen.get_state(),
        "arg": env.ns.arg.get_state(),
    }


def _with_argument_generator(target):
    def build():
        env = program_env(EXPLICIT_GENERATORS, target, name="rng10")
        env.ns.arg = torch.Generator().manual_seed(4)
        return env

    return build


@backends()
def test_draws_from_explicit_generators_advance_them(backend):
    # Draws from a torch.Generator the function is handed, holds in an attribute or a
    # global: each replay draws from it (its state is outside the graph) and leaves it
    # where eager does; a generator reseeded between calls is seen.
    run_case(
        Case(
            "draws_from_explicit_generators_advance_them",
            _with_argument_generator("f"),
            [
                *calls(3, lambda env: (torch.ones(4), env.ns.arg)),
                Do(lambda env: env.ns.noise.gen.manual_seed(9), "noise.gen.manual_seed(9)"),
                *calls(2, lambda env: (torch.ones(4), env.ns.arg)),
            ],
            watch=_generators,
            min_hits=3,
        ),
        backend,
    )


@backends()
def test_generator_seeded_inside_the_function(backend):
    run_case(
        Case(
            "generator_seeded_inside_the_function",
            _with_argument_generator("reseeded"),
            calls(3, lambda env: (torch.ones(4), env.ns.arg)),
            watch=_generators,
        ),
        backend,
    )
