"""The runtime on a CUDA device: Triton kernels through Inductor, replayed.

Each test compiles on the GPU with ``backend="inductor"``, checks every call
against eager on fresh data, and checks that later calls replay the record
(no monitoring run, no fallback).  Skipped without CUDA (see conftest.py);
``make gpu-check`` runs them on the CUDA machine.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import fullgraph.runtime as fr

pytestmark = [pytest.mark.cuda, pytest.mark.inductor]
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # cpu: checking the tests only
# Inductor reorders reductions: its results differ from eager in the last bits.
TOLERANCE = {"atol": 2e-3, "rtol": 2e-3}


def _replays(compiled, eager, make_args, calls: int = 4) -> None:
    for call in range(calls):
        args = make_args()
        torch.testing.assert_close(compiled(*args), eager(*args), **TOLERANCE)
    assert compiled.stats.monitor_runs == 1, compiled.stats
    assert compiled.stats.hits == calls - 1, compiled.stats
    assert compiled.stats.fallback_reason is None


def _rng_state() -> torch.Tensor:
    return torch.cuda.get_rng_state() if DEVICE == "cuda" else torch.get_rng_state()


class Block(torch.nn.Module):
    def __init__(self, width: int = 64):
        super().__init__()
        self.norm = torch.nn.LayerNorm(width)
        self.up = torch.nn.Linear(width, 4 * width)
        self.down = torch.nn.Linear(4 * width, width)

    def forward(self, x):
        return x + self.down(F.gelu(self.up(self.norm(x))))


def test_mlp_block_runs_triton_kernels_and_replays():
    torch.manual_seed(0)
    model = Block().to(DEVICE).eval()
    compiled = fr.compile(model, backend="inductor")
    with torch.no_grad():
        _replays(compiled, model, lambda: (torch.randn(8, 64, device=DEVICE),))
    assert compiled.records[0].graphs, "no graph was captured"


def test_conv_net_and_attention_replay():
    torch.manual_seed(0)
    conv = (
        torch.nn.Sequential(
            torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU()
        )
        .to(DEVICE)
        .eval()
    )

    def attend(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    with torch.no_grad():
        _replays(
            fr.compile(conv, backend="inductor"),
            conv,
            lambda: (torch.randn(2, 3, 16, 16, device=DEVICE),),
        )
    _replays(
        fr.compile(attend, backend="inductor"),
        attend,
        lambda: tuple(torch.randn(2, 4, 32, 16, device=DEVICE) for _ in range(3)),
    )


def test_dropout_gives_eagers_numbers_under_the_same_seed():
    def noisy(x):
        return F.dropout(x, p=0.5, training=True) + torch.rand_like(x)

    compiled = fr.compile(noisy, backend="inductor")
    for seed in range(3):
        x = torch.randn(64, device=DEVICE)
        torch.manual_seed(seed)
        expected = noisy(x)
        after_eager = _rng_state()
        torch.manual_seed(seed)
        actual = compiled(x)
        torch.testing.assert_close(actual, expected)
        assert torch.equal(_rng_state(), after_eager)
    assert compiled.stats.hits == 2


def test_training_step_matches_eager():
    def make():
        torch.manual_seed(0)
        model = torch.nn.Linear(16, 4).to(DEVICE)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)

        def step(x, y):
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            return loss.detach()

        return model, step

    eager_model, eager_step = make()
    model, step = make()
    compiled = fr.compile(step, backend="inductor")
    for _ in range(4):
        x, y = torch.randn(8, 16, device=DEVICE), torch.randn(8, 4, device=DEVICE)
        torch.testing.assert_close(compiled(x, y), eager_step(x, y), **TOLERANCE)
    torch.testing.assert_close(model.weight, eager_model.weight, **TOLERANCE)
    assert compiled.stats.hits == 3


def test_a_transformers_model_on_the_gpu():
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(
        vocab_size=100,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    model = transformers.BertModel(config).to(DEVICE).eval()
    compiled = fr.compile(model, backend="inductor")
    with torch.no_grad():
        for _ in range(3):
            ids = torch.randint(3, 100, (2, 16), device=DEVICE)
            torch.testing.assert_close(
                compiled(input_ids=ids).last_hidden_state,
                model(input_ids=ids).last_hidden_state,
                **TOLERANCE,
            )
    assert compiled.stats.hits == 2
