"""A debugging ``print`` of a tensor left in ``forward``: a side effect that splits the graph."""

import torch
from torch import nn


class NoisyMLP(nn.Module):
    def __init__(self, width: int = 256):
        super().__init__()
        self.fc1 = nn.Linear(width, width)
        self.fc2 = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc1(x))
        print("forward: mean activation", h.mean())
        return self.fc2(h)


def entry():
    torch.manual_seed(0)
    return NoisyMLP().eval(), (torch.randn(64, 256),)
