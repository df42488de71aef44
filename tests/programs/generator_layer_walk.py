"""A U-Net-like encoder that walks its stages through a generator method (yield) and collects skip features."""
import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self, channels=(3, 4, 8)):
        super().__init__()
        self.stages = nn.ModuleList(
            nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
            for cin, cout in zip(channels[:-1], channels[1:])
        )

    def iter_stages(self, x):
        for stage in self.stages:
            x = stage(x)
            yield x

    def forward(self, x):
        skips = list(self.iter_stages(x))
        pooled = [s.mean(dim=(2, 3)) for s in skips]
        return torch.cat(pooled, dim=1), skips[-1]


def make_model():
    torch.manual_seed(0)
    return Encoder().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 3, 8, 8, generator=g),)


EXPECTED_GRAPHS = 1
