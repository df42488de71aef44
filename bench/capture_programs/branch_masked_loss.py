"""Masked regression loss as in detection / keypoint heads: average over valid entries,
and return zero when a batch has none (``if mask.sum() > 0``)."""

import torch
from torch import nn


class MaskedL1Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x, target, valid):
        pred = self.fc(x)
        mask = valid.unsqueeze(-1).expand_as(pred).float()
        if mask.sum() > 0:
            loss = ((pred - target).abs() * mask).sum() / mask.sum()
        else:
            loss = pred.sum() * 0.0
        return loss


def make_model():
    torch.manual_seed(0)
    return MaskedL1Head().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    valid = torch.rand(5, generator=g) > 0.5
    if seed == 1:  # a batch with no valid entry: the other path
        valid[:] = False
    return torch.randn(5, 4, generator=g), torch.randn(5, 2, generator=g), valid


EXPECTED_GRAPHS = 1
