"""Input validation with ``assert`` on tensor values: Python reads the data."""

import torch
from torch import nn


class CheckedMLP(nn.Module):
    def __init__(self, width: int = 256):
        super().__init__()
        self.fc1 = nn.Linear(width, width)
        self.fc2 = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert torch.isfinite(x).all(), "input contains NaN or inf"
        h = torch.relu(self.fc1(x))
        return self.fc2(h)


def entry():
    torch.manual_seed(0)
    return CheckedMLP().eval(), (torch.randn(64, 256),)
