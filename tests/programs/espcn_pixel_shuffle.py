"""ESPCN super-resolution: conv feature extractor then sub-pixel upsampling with nn.PixelShuffle."""
import torch
import torch.nn as nn


class ESPCN(nn.Module):
    def __init__(self, scale_factor=2, num_channels=1):
        super().__init__()
        self.first_part = nn.Sequential(
            nn.Conv2d(num_channels, 8, kernel_size=5, padding=5 // 2),
            nn.Tanh(),
            nn.Conv2d(8, 4, kernel_size=3, padding=3 // 2),
            nn.Tanh(),
        )
        self.last_part = nn.Sequential(
            nn.Conv2d(4, num_channels * (scale_factor ** 2), kernel_size=3, padding=3 // 2),
            nn.PixelShuffle(scale_factor),
        )

    def forward(self, x):
        x = self.first_part(x)
        return self.last_part(x).clamp(0.0, 1.0)


def make_model():
    torch.manual_seed(0)
    return ESPCN().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(2, 1, 8, 8, generator=g),)


EXPECTED_GRAPHS = 1
