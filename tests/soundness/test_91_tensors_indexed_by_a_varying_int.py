"""Class 91: a tensor indexed by an int that varies (``self.alphas_cumprod[t]``).

A diffusion sampler reads its noise schedule by timestep, a decoder its position
table by step.  The index was guarded by value: a record per timestep, and after
eight of them the sampler ran eagerly (a 50-step DDPM loop never replayed).  It is
lifted into the graph now (``monitor/lifted_index.py``); the record holds while
the index is in range (a negative one wraps in eager, an out-of-range one raises:
other calls).  The view it selects is still a view: an update through it reaches
the buffer.
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Call, Case, backends, execg, module_prog, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="indexed91")

SAMPLER_STEP = """
import torch

class Sampler(torch.nn.Module):
    def __init__(self):
        super().__init__()
        betas = torch.linspace(1e-4, 0.02, 50)
        self.register_buffer("betas", betas)
        self.register_buffer("alphas_cumprod", torch.cumprod(1 - betas, 0))
        self.register_buffer("visits", torch.zeros(50))
        self.net = torch.nn.Linear(4, 4)

    def forward(self, x, t):
        eps = self.net(x)
        a = self.alphas_cumprod[t]
        b = self.betas[t]
        self.visits[t] += 1  # an update through the selected view
        return (x - b / (1 - a).sqrt() * eps) / (1 - b).sqrt()

def make():
    return Sampler()
"""


_sampler = module_prog(SAMPLER_STEP, name="indexed91s")


def _step(t):
    return lambda env: (torch.randn(2, 4), t)


@backends(inductor=True)
def test_a_sampler_reads_its_schedule_by_timestep(backend):
    script = [Call(_step(t)) for t in range(49, 40, -1)]
    watch = lambda env: env.target.visits
    run_case(Case("sampler", _sampler, script, min_hits=6, watch=watch), backend)


@backends()
def test_negative_and_out_of_range_timesteps(backend):
    script = [Call(_step(t)) for t in (10, 11, 12, -1, 13, -50, 50, 14)]
    watch = lambda env: env.target.visits
    run_case(Case("edges", _sampler, script, min_hits=3, watch=watch), backend)


POSITION_TABLE = """
import torch

TABLE = torch.randn(16, 4)

def f(x, step):
    return x + TABLE[step] * 2
"""


@backends()
def test_a_global_table_replaced_between_calls(backend):
    script = [Call(lambda env, s=s: (torch.randn(4), s)) for s in (0, 1, 2)]
    script += [
        execg("TABLE = torch.randn(8, 4)"),
        *[Call(lambda env, s=s: (torch.randn(4), s)) for s in (3, 9, 4)],
    ]
    run_case(Case("table", prog(POSITION_TABLE), script, min_hits=2), backend)


CACHE_WRITTEN_BY_POSITION = """
import torch

class Decoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("keys", torch.zeros(8, 4))
        self.register_buffer("seen", torch.zeros(8))
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x, pos):
        self.keys[pos] = self.proj(x)  # a tensor stored at the position
        self.seen[pos] = 1.0  # a number stored there
        self.keys[pos] = self.keys[pos].unsqueeze(0) * 0.5  # a leading size of 1 dropped
        scores = self.keys @ x
        return scores.masked_fill(self.seen == 0, float("-inf")).softmax(0)

def make():
    return Decoder()
"""


_decoder = module_prog(CACHE_WRITTEN_BY_POSITION, name="indexed91d")


@backends(inductor=True)
def test_a_cache_written_at_a_varying_position(backend):
    script = [Call(lambda env, p=p: (torch.randn(4), p)) for p in range(6)]
    watch = lambda env: (env.target.keys, env.target.seen)
    run_case(Case("decoder_cache", _decoder, script, min_hits=3, watch=watch), backend)
