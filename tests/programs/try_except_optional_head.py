"""A model that probes for an optional head with try/except AttributeError, as checkpoint-compatible code does."""
import torch
import torch.nn as nn


class Backbone(nn.Module):
    def __init__(self, with_aux=False):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 10), nn.ReLU())
        self.head = nn.Linear(10, 3)
        if with_aux:
            self.aux_head = nn.Linear(10, 2)

    def forward(self, x):
        h = self.body(x)
        out = self.head(h)
        try:
            aux = self.aux_head(h)
        except AttributeError:
            aux = h.new_zeros(h.shape[0], 2)
        return out, aux


def make_model():
    torch.manual_seed(0)
    return Backbone(with_aux=False).eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(4, 6, generator=g),)


EXPECTED_GRAPHS = 1
