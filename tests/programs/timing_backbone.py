"""A model that times its backbone with time.perf_counter() and keeps the latency in an attribute."""
import time

import torch
import torch.nn as nn


class TimedModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 4, 3, padding=1)
        self.backbone = nn.Sequential(nn.ReLU(), nn.Conv2d(4, 4, 3, padding=1), nn.ReLU())
        self.head = nn.Linear(4, 2)
        self.backbone_ms = 0.0

    def forward(self, x):
        x = self.stem(x)
        t0 = time.perf_counter()  # BREAK: FG201
        x = self.backbone(x)
        self.backbone_ms = (time.perf_counter() - t0) * 1000.0  # BREAK: FG201
        return self.head(x.mean(dim=(2, 3)))


def make_model():
    torch.manual_seed(0)
    return TimedModel().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 3, 6, 6, generator=g),)


EXPECTED_GRAPHS = 3


def observe_state(model):
    """The clock was read on the last call too (the value itself differs run to run)."""
    return isinstance(model.backbone_ms, float) and model.backbone_ms > 0.0
