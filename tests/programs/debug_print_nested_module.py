"""A transformer block whose nested attention submodule prints a debug line when its config says debug."""
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class BlockConfig:
    dim: int = 8
    heads: int = 2
    debug: bool = True


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.attn = nn.MultiheadAttention(cfg.dim, cfg.heads, batch_first=True)

    def forward(self, x):
        out, weights = self.attn(x, x, x)
        if self.cfg.debug:
            print(f"[{type(self).__name__}] weights {tuple(weights.shape)}")  # DEFER: FG201
        return out


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.norm1 = nn.LayerNorm(cfg.dim)
        self.attn = Attention(cfg)
        self.norm2 = nn.LayerNorm(cfg.dim)
        self.mlp = nn.Sequential(nn.Linear(cfg.dim, 2 * cfg.dim), nn.GELU(), nn.Linear(2 * cfg.dim, cfg.dim))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


def make_model():
    torch.manual_seed(0)
    return Block(BlockConfig()).eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 4, 8, generator=g),)


# The print shows only a shape: made after the graph, which it does not split.
EXPECTED_GRAPHS = 1
