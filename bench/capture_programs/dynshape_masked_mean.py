"""Losses over selected elements with boolean indexing (``x[mask]``): positive-anchor
regression in detectors, ignore-index handling in segmentation."""

import torch
from torch import nn


class PositiveAnchorLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.reg = nn.Linear(4, 4)

    def forward(self, feats, targets, labels):
        pred = self.reg(feats)
        positive = labels > 0
        diff = pred[positive] - targets[positive]
        return torch.nn.functional.smooth_l1_loss(diff, torch.zeros_like(diff), reduction="sum")


def make_model():
    torch.manual_seed(0)
    return PositiveAnchorLoss().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 3, (8,), generator=g)
    return torch.randn(8, 4, generator=g), torch.randn(8, 4, generator=g), labels


EXPECTED_GRAPHS = 1
