"""Test-time augmentation with Python's random module: a seeded random.Random decides whether to flip the input."""
import random

import torch
import torch.nn as nn


class TTAModel(nn.Module):
    def __init__(self, p=0.5):
        super().__init__()
        self.p = p
        self.rng = random.Random(0)
        self.norm = nn.BatchNorm2d(3)
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.fc = nn.Linear(4 * 4 * 4, 2)

    def forward(self, x):
        x = self.norm(x)
        if self.rng.random() < self.p:  # BREAK: FG201
            x = torch.flip(x, dims=[3])
        return self.fc(torch.relu(self.conv(x)).flatten(1))


def make_model():
    torch.manual_seed(0)
    return TTAModel().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 3, 4, 4, generator=g),)


EXPECTED_GRAPHS = 2
# random.Random(0) draws 0.84, 0.76, 0.42: no flip, no flip, flip -> two paths.
EXPECTED_MONITOR_RUNS = 2


def observe_state(model):
    """The generator's state: each call must draw exactly once, as eager does."""
    return model.rng.getstate()
