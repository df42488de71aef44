"""A long-running block loop that writes progress dots with sys.stdout.write and flushes, like old training scripts."""
import sys

import torch
import torch.nn as nn


class DeepStack(nn.Module):
    def __init__(self, depth=4, dim=8, report_every=2):
        super().__init__()
        self.report_every = report_every
        self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(dim, dim), nn.Tanh()) for _ in range(depth))

    def forward(self, x):
        for i, block in enumerate(self.blocks):
            x = x + block(x)
            if (i + 1) % self.report_every == 0 and i + 1 < len(self.blocks):
                sys.stdout.write(".")  # BREAK: FG201
        return x


def make_model():
    torch.manual_seed(0)
    return DeepStack().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 8, generator=g),)


# One dot after block 2 (none after the last block): one split.
EXPECTED_GRAPHS = 2
