"""Renormalising features whose norm is too large (max-norm constraints, clip-by-norm):
``if norm > max_norm: x = x * (max_norm / norm)``."""

import torch
from torch import nn


class MaxNormProjector(nn.Module):
    def __init__(self, max_norm=3.0):
        super().__init__()
        self.fc = nn.Linear(6, 6)
        self.max_norm = max_norm

    def forward(self, x):
        h = self.fc(x)
        norm = h.norm()
        if norm > self.max_norm:
            h = h * (self.max_norm / (norm + 1e-6))
        return torch.tanh(h)


def make_model():
    torch.manual_seed(0)
    return MaxNormProjector().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    scale = 0.2 if seed == 1 else 3.0  # seed 1 stays under the limit
    return (scale * torch.randn(2, 6, generator=g),)


EXPECTED_GRAPHS = 1
