"""A normalising Function whose forward reads a Python number from the data
(``x.abs().max().item()``) and keeps it on ``ctx`` for backward, as in per-tensor
quantisation scales; a training step."""

import torch
from torch import nn


class ScaleByMax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, eps=1e-6):
        scale = x.abs().max().item() + eps
        ctx.scale = scale
        return x / scale

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output / ctx.scale, None


class NormalisedHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.out = nn.Linear(4, 2)

    def forward(self, x):
        return self.out(ScaleByMax.apply(self.fc(x)))


def make_model():
    torch.manual_seed(0)
    return NormalisedHead().train()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(3, 4, generator=g),)


EXPECTED_GRAPHS = 1
GRADIENTS = True
