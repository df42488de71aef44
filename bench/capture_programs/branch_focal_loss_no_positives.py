"""CornerNet / CenterNet-style focal loss on a heatmap: normalise by the number of
positives, and use the negative term alone when a batch has none
(``if num_pos == 0: loss = -neg_loss``); a training step."""

import torch
from torch import nn


class HeatmapHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 2, 3, padding=1)

    def forward(self, features, target):
        pred = torch.sigmoid(self.conv(features)).clamp(1e-4, 1 - 1e-4)
        pos = target.eq(1).float()
        neg = 1.0 - pos
        neg_weights = torch.pow(1 - target, 4)
        pos_loss = (torch.log(pred) * torch.pow(1 - pred, 2) * pos).sum()
        neg_loss = (torch.log(1 - pred) * torch.pow(pred, 2) * neg_weights * neg).sum()
        num_pos = pos.sum()
        if num_pos == 0:
            loss = -neg_loss
        else:
            loss = -(pos_loss + neg_loss) / num_pos
        return loss


def make_model():
    torch.manual_seed(0)
    return HeatmapHead().train()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    target = torch.rand(2, 2, 6, 6, generator=g) * 0.9
    if seed != 1:  # seed 1: a batch without any object centre
        target[0, 1, 2, 3] = 1.0
        target[1, 0, 4, 4] = 1.0
    return torch.randn(2, 4, 6, 6, generator=g), target


EXPECTED_GRAPHS = 1
GRADIENTS = True
