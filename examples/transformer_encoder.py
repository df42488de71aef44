"""A small pre-norm transformer encoder that prints a statistic: one break, mid-model.

Large enough for compilation to matter on a CPU (layer norms, GELU and residual
adds that Inductor fuses around the matrix products), and broken in two by the
``print``: torch.compile and fullgraph each compile two graphs until ``fullgraph
fix`` defers the print.
"""

import torch
from torch import nn
from torch.nn import functional


class EncoderLayer(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.norm2 = nn.LayerNorm(width)
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, width = x.shape
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        q, k, v = (t.view(batch, length, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        attended = functional.scaled_dot_product_attention(q, k, v)
        x = x + self.out(attended.transpose(1, 2).reshape(batch, length, width))
        return x + self.down(functional.gelu(self.up(self.norm2(x))))


class Encoder(nn.Module):
    def __init__(self, vocab: int = 1000, width: int = 256, heads: int = 4, depth: int = 4):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.layers = nn.ModuleList(EncoderLayer(width, heads) for _ in range(depth))
        self.norm = nn.LayerNorm(width)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.embed(ids)
        for index, layer in enumerate(self.layers):
            h = layer(h)
            if index == 1:
                print("hidden norm after layer 2:", h.norm())
        return self.norm(h)


def entry():
    torch.manual_seed(0)
    return Encoder().eval(), (torch.randint(0, 1000, (8, 64)),)
