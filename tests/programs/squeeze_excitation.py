"""A Squeeze-and-Excitation block inside a small conv net (channel gating with sigmoid)."""
import torch
import torch.nn as nn


class SELayer(nn.Module):
    def __init__(self, channel, reduction=4):
        super().__init__()
        self.avg_pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Sequential(
            nn.Linear(channel, channel // reduction, bias=False),
            nn.ReLU(inplace=True),
            nn.Linear(channel // reduction, channel, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, x):
        b, c, _, _ = x.size()
        y = self.avg_pool(x).view(b, c)
        y = self.fc(y).view(b, c, 1, 1)
        return x * y.expand_as(x)


class SENet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, padding=1)
        self.se = SELayer(16)
        self.head = nn.Conv2d(16, 2, 1)

    def forward(self, x):
        return self.head(self.se(torch.relu(self.conv(x))))


def make_model():
    torch.manual_seed(0)
    return SENet().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 3, 8, 8, generator=g),)


EXPECTED_GRAPHS = 1
