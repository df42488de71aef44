"""A model with the graph breaks the server must show (non-ASCII on purpose)."""

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        print("é 𝔵 shape", x.sum())
        return self.lin(x).relu()


def build():
    torch.manual_seed(0)
    return Net(), (torch.randn(2, 4),)
