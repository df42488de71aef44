"""Binarized / quantized networks (BNN, DoReFa): a straight-through estimator whose forward
rounds with a bit width passed as an int argument; inference."""

import torch
import torch.nn.functional as F
from torch import nn


class RoundSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, bits):
        scale = float(2**bits - 1)
        return torch.round(x.clamp(0, 1) * scale) / scale

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output, None


class QuantLinear(nn.Linear):
    def __init__(self, *args, bits=4, **kwargs):
        super().__init__(*args, **kwargs)
        self.bits = bits

    def forward(self, x):
        w = torch.tanh(self.weight)
        w = w / (2 * w.abs().max()) + 0.5
        w_q = 2 * RoundSTE.apply(w, self.bits) - 1
        return F.linear(x, w_q, self.bias)


class QuantMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = QuantLinear(10, 16, bits=4)
        self.fc2 = QuantLinear(16, 3, bits=2)

    def forward(self, x):
        x = RoundSTE.apply(torch.sigmoid(self.fc1(x)), 8)
        return self.fc2(x)


def make_model():
    torch.manual_seed(0)
    return QuantMLP().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(3, 10, generator=g),)


EXPECTED_GRAPHS = 1
