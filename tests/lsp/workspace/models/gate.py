"""A tensor-dependent branch and a check on tensor data: both have safe fixes."""

from torch import nn


class Gate(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            y = x * 2
        else:
            y = x - 1
        assert (y >= -10).all(), "ÿ out of range"
        return y
