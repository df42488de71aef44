"""An attention layer that logs the shape of its score matrix with the logging module."""
import logging

import torch
import torch.nn as nn

logger = logging.getLogger(__name__)


class SelfAttention(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.scale = dim ** -0.5

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) * self.scale
        logger.info("attention scores shape: %s", tuple(scores.shape))  # BREAK: FG201
        return self.out(scores.softmax(dim=-1) @ v)


def make_model():
    torch.manual_seed(0)
    return SelfAttention().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 5, 8, generator=g),)


EXPECTED_GRAPHS = 2
