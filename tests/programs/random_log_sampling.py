"""Sampled debug logging: the module-level random.random() decides whether to keep a copy of the batch (rate 0 here)."""
import random

import torch
import torch.nn as nn


class SampledLogging(nn.Module):
    def __init__(self, log_rate=0.0):
        super().__init__()
        self.log_rate = log_rate
        self.logged = []
        self.body = nn.Sequential(nn.Conv1d(3, 6, 3, padding=1), nn.ReLU())
        self.head = nn.Linear(6, 2)

    def forward(self, x):
        h = self.body(x)
        if random.random() < self.log_rate:  # BREAK: FG201
            self.logged.append(h.detach().clone())
        return self.head(h.mean(dim=-1))


def make_model():
    torch.manual_seed(0)
    return SampledLogging().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 3, 7, generator=g),)


# random.random() is never below 0.0, so every call takes the same path.
EXPECTED_GRAPHS = 2
