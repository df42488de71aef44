"""A calibrated classifier that computes its temperature with numpy (np.exp of a Python float) inside forward.

numpy on plain Python values is deterministic, so the value is guarded, not a break.
"""
import numpy as np
import torch
import torch.nn as nn


class Calibrated(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(6, 8), nn.ReLU())
        self.head = nn.Linear(8, 3)
        self.log_temperature = 0.7  # fitted offline, stored as a Python float

    def forward(self, x):
        h = self.encoder(x)
        temperature = float(np.exp(self.log_temperature))
        return torch.softmax(self.head(h) / temperature, dim=-1)


def make_model():
    torch.manual_seed(0)
    return Calibrated().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(3, 6, generator=g),)


EXPECTED_GRAPHS = 1
