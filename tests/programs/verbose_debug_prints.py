"""An encoder with a verbose flag that prints progress messages at two points of forward."""
import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self, verbose=True):
        super().__init__()
        self.verbose = verbose
        self.embed = nn.Linear(6, 10)
        self.body = nn.Sequential(nn.ReLU(), nn.Linear(10, 10), nn.ReLU())
        self.head = nn.Linear(10, 2)

    def forward(self, x):
        h = self.embed(x)
        if self.verbose:
            print(f"[Encoder] embedded batch of {h.size(0)} with dim {h.size(1)}")  # DEFER: FG201
        h = self.body(h)
        if self.verbose:
            print("[Encoder] body done")  # DEFER: FG201
        return self.head(h)


def make_model():
    torch.manual_seed(0)
    return Encoder().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(3, 6, generator=g),)


# The prints show only sizes and text: made after the graph, which they do not split.
EXPECTED_GRAPHS = 1
