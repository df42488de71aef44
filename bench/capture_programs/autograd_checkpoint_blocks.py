"""Activation checkpointing as in timm / HF ``gradient_checkpointing``: each block runs
through ``torch.utils.checkpoint.checkpoint(..., use_reentrant=False)``; training step."""

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


class MLPBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 2 * dim)
        self.fc2 = nn.Linear(2 * dim, dim)

    def forward(self, x):
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.norm(x))))


class CheckpointedEncoder(nn.Module):
    def __init__(self, dim=8, depth=3):
        super().__init__()
        self.blocks = nn.ModuleList(MLPBlock(dim) for _ in range(depth))
        self.gradient_checkpointing = True

    def forward(self, x):
        for block in self.blocks:
            if self.gradient_checkpointing and self.training:
                x = checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x)
        return x.mean(dim=1)


def make_model():
    torch.manual_seed(0)
    return CheckpointedEncoder().train()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 5, 8, generator=g),)


EXPECTED_GRAPHS = 1
GRADIENTS = True
