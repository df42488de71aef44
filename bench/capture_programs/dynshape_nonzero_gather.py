"""Sparse point features: indices of occupied cells from ``nonzero``, gathered features,
and a scatter back into a dense grid (PointPillars-style scatter)."""

import torch
from torch import nn


class PillarScatter(nn.Module):
    def __init__(self):
        super().__init__()
        self.encode = nn.Linear(3, 4)

    def forward(self, occupancy, points):
        idx = torch.nonzero(occupancy.flatten()).squeeze(1)
        feats = self.encode(points.flatten(0, 1)[idx])
        grid = feats.new_zeros(occupancy.numel(), 4)
        grid = grid.index_add(0, idx, feats)
        return grid.view(*occupancy.shape, 4).sum(dim=(0, 1))


def make_model():
    torch.manual_seed(0)
    return PillarScatter().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    occupancy = torch.rand(3, 4, generator=g) > 0.5
    return occupancy, torch.randn(3, 4, 3, generator=g)


EXPECTED_GRAPHS = 1
