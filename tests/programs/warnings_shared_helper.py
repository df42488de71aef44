"""A model that calls one input-checking helper (warnings.warn) from two blocks: one break site, hit twice."""
import warnings

import torch
import torch.nn as nn


def _check_width(x, limit=4):
    if x.shape[-1] > limit:
        warnings.warn(f"feature width {x.shape[-1]} exceeds {limit}; consider a bottleneck")  # DEFER: FG201
    return x


class TwoStage(nn.Module):
    def __init__(self):
        super().__init__()
        self.stage1 = nn.Sequential(nn.Linear(4, 6), nn.ReLU())
        self.stage2 = nn.Sequential(nn.Linear(6, 6), nn.ReLU())
        self.head = nn.Linear(6, 1)

    def forward(self, x):
        x = _check_width(self.stage1(x))
        x = _check_width(self.stage2(x))
        return self.head(x)


def make_model():
    torch.manual_seed(0)
    return TwoStage().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(3, 4, generator=g),)


# The warning runs once after each stage; its message holds only sizes, so the mock
# makes it after the graph, three times, in order: one graph.
EXPECTED_GRAPHS = 1
