"""A model that picks a branch by reading a tensor statistic into Python with .item()."""
import torch
import torch.nn as nn


class GatedNet(nn.Module):
    def __init__(self, threshold=0.8):
        super().__init__()
        self.threshold = threshold
        self.encoder = nn.Linear(6, 6)
        self.light = nn.Linear(6, 3)
        self.heavy = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))

    def forward(self, x):
        h = torch.tanh(self.encoder(x))
        energy = h.abs().mean()
        if energy.item() > self.threshold * 0.5:  # BREAK: FG202
            out = self.heavy(h)
        else:
            out = self.light(h)
        return out.softmax(dim=-1)


def make_model():
    torch.manual_seed(0)
    return GatedNet().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    scale = (0.2, 3.0, 0.3)[seed % 3]  # seeds 0 and 2 take the light branch, seed 1 the heavy one
    return (torch.randn(4, 6, generator=g) * scale,)


EXPECTED_GRAPHS = 2
EXPECTED_MONITOR_RUNS = 2
