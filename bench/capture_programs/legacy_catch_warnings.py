"""Segmentation decoders that silence deprecation warnings around an upsampling call with
``warnings.catch_warnings()`` + ``warnings.simplefilter("ignore")``."""

import warnings

import torch
import torch.nn.functional as F
from torch import nn


class FPNDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.lateral = nn.Conv2d(4, 4, 1)
        self.smooth = nn.Conv2d(4, 2, 3, padding=1)

    def forward(self, coarse, fine):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            up = F.interpolate(coarse, scale_factor=2, mode="bilinear", align_corners=False)
        return self.smooth(up + self.lateral(fine))


def make_model():
    torch.manual_seed(0)
    return FPNDecoder().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 4, 4, 4, generator=g), torch.randn(2, 4, 8, 8, generator=g))


EXPECTED_GRAPHS = 1
