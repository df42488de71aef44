"""Scaled attention and flatten heads that do arithmetic on sizes with numpy
(``np.sqrt(d)``, ``np.prod(shape)``) and with torch calls returning Python numbers or tuples
(``x.size()``, ``x.dim()``, ``x.numel()``, ``x.stride()``, ``torch.broadcast_shapes``)."""

import numpy as np
import torch
from torch import nn


class AttentionHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(8, 24)
        self.fc = nn.Linear(4 * 8, 3)

    def forward(self, x):
        b, n, d = x.size()
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        attn = torch.softmax(q @ k.transpose(-2, -1) / np.sqrt(d), dim=-1)
        out = attn @ v
        flat = int(np.prod(out.shape[1:]))
        assert out.dim() == 3 and out.numel() == b * flat and out.stride()[-1] == 1
        shape = torch.broadcast_shapes(out.shape, (1, n, d))
        return self.fc(out.expand(shape).reshape(b, flat))


def make_model():
    torch.manual_seed(0)
    return AttentionHead().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 4, 8, generator=g),)


EXPECTED_GRAPHS = 1
