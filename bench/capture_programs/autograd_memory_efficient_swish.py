"""EfficientNet-PyTorch's ``MemoryEfficientSwish``: a Function that saves its input with
``ctx.save_for_backward`` and recomputes the sigmoid in backward; training step."""

import torch
from torch import nn


class SwishImplementation(torch.autograd.Function):
    @staticmethod
    def forward(ctx, i):
        result = i * torch.sigmoid(i)
        ctx.save_for_backward(i)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        (i,) = ctx.saved_tensors
        sigmoid_i = torch.sigmoid(i)
        return grad_output * (sigmoid_i * (1 + i * (1 - sigmoid_i)))


class MemoryEfficientSwish(nn.Module):
    def forward(self, x):
        return SwishImplementation.apply(x)


class MBConvStem(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.swish = MemoryEfficientSwish()
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        x = self.swish(self.bn(self.conv(x)))
        return self.head(x.mean(dim=(2, 3)))


def make_model():
    torch.manual_seed(0)
    return MBConvStem().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 3, 6, 6, generator=g),)


EXPECTED_GRAPHS = 1
GRADIENTS = True
