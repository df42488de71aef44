"""A BranchyNet-style early exit: return the first classifier's answer when its confidence .item() is high."""
import torch
import torch.nn as nn


class EarlyExitNet(nn.Module):
    def __init__(self, threshold=0.6):
        super().__init__()
        self.threshold = threshold
        self.block1 = nn.Sequential(nn.Linear(8, 12), nn.ReLU())
        self.exit1 = nn.Linear(12, 4)
        self.block2 = nn.Sequential(nn.Linear(12, 12), nn.ReLU(), nn.Linear(12, 12), nn.ReLU())
        self.final = nn.Linear(12, 4)

    def forward(self, x):
        h = self.block1(x)
        early = self.exit1(h)
        confidence = early.softmax(dim=-1).max(dim=-1).values.mean()
        if confidence.item() > self.threshold:  # BREAK: FG202
            return early
        h = self.block2(h)
        return self.final(h)


def make_model():
    torch.manual_seed(0)
    return EarlyExitNet().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    scale = (8.0, 0.1, 8.0)[seed % 3]  # seeds 0 and 2 exit early, seed 1 runs the whole network
    return (torch.randn(3, 8, generator=g) * scale,)


# Seed 0 exits early: nothing but the return follows the read, so one graph.
EXPECTED_GRAPHS = 1
EXPECTED_MONITOR_RUNS = 2
