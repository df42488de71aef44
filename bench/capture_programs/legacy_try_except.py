"""Exceptions raised and caught inside forward: a cache lookup that falls back on
``KeyError``, and an optional feature probed with ``try: ... except (TypeError, ValueError)``."""

import torch
from torch import nn


def parse_kernel(spec):
    if not isinstance(spec, int):
        raise TypeError(f"kernel must be int, got {spec!r}")
    return spec


class PositionalMixer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 6)
        self.cache = {}
        self.kernel_spec = "3"

    def positions(self, n):
        try:
            return self.cache[n]
        except KeyError:
            table = torch.arange(n, dtype=torch.float32).unsqueeze(-1) / n
            return table

    def forward(self, x):
        try:
            k = parse_kernel(self.kernel_spec)
        except (TypeError, ValueError):
            k = int(self.kernel_spec)
        h = self.fc(x) + self.positions(x.shape[1])
        return torch.nn.functional.avg_pool1d(h.transpose(1, 2), k, stride=1, padding=k // 2)


def make_model():
    torch.manual_seed(0)
    return PositionalMixer().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 7, 6, generator=g),)


EXPECTED_GRAPHS = 1
