"""A model without graph breaks: the whole forward pass is one graph."""

import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self, width: int = 256):
        super().__init__()
        self.fc1 = nn.Linear(width, width)
        self.fc2 = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.nn.functional.gelu(self.fc1(x))
        return self.norm(x + self.fc2(h))


def entry():
    torch.manual_seed(0)
    return MLP().eval(), (torch.randn(64, 256),)
