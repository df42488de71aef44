"""A Poisson-style loss that asserts on tensor data (assert (rate >= 0).all()) before using it."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class PoissonRegressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 1))

    def forward(self, x, counts):
        rate = F.softplus(self.net(x)).squeeze(-1)
        assert (rate >= 0).all(), "rates must be non-negative"  # BREAK: FG202
        nll = rate - counts * torch.log(rate + 1e-8)
        return nll.mean(), rate


def make_model():
    torch.manual_seed(0)
    return PoissonRegressor().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(6, 5, generator=g), torch.randint(0, 5, (6,), generator=g).float())


EXPECTED_GRAPHS = 2
