"""In-place activations (InPlace-ABN style): a Function that modifies its input in place
and declares it with ``ctx.mark_dirty``; inference on an intermediate tensor."""

import torch
from torch import nn


class InplaceLeakyClamp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, slope, limit):
        ctx.mark_dirty(x)
        x.clamp_(max=limit)
        x.mul_(torch.where(x < 0, slope, 1.0))
        ctx.save_for_backward(x)
        ctx.slope = slope
        return x

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * torch.where(y < 0, ctx.slope, 1.0), None, None


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 6)
        self.out = nn.Linear(6, 2)

    def forward(self, x):
        h = self.fc(x)
        h = InplaceLeakyClamp.apply(h, 0.1, 0.5)
        return self.out(h)


def make_model():
    torch.manual_seed(0)
    return Block().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(4, 6, generator=g),)


EXPECTED_GRAPHS = 1
