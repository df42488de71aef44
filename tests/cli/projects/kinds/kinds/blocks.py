"""One read of tensor data per kind of statement, in a submodule's forward."""

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        assert h.abs().max() < 1e6, "activations exploded"
        print(f"h = {h.sum()}")
        if h.mean() > 0:
            h = h * 2
        scale = h.max().item() * 0.5 + 1
        return h * scale


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, x):
        return self.block(x) + 1


def build_model():
    torch.manual_seed(0)
    return Model(), (torch.randn(2, 4),)


def build_block():
    torch.manual_seed(0)
    return Block(), (torch.randn(2, 4),)


class Exploding(nn.Module):
    def forward(self, x):
        return self.check(x * 2)

    def check(self, y):
        raise ValueError(f"bad batch of {y.shape[0]}")


def build_raising():
    return Exploding(), (torch.randn(2, 4),)
