"""DANN-style domain adaptation: a gradient reversal layer (``GradReverse.apply(x, lambd)``)
with a float non-tensor argument; a training step, so the user's backward must be kept."""

import torch
from torch import nn


class GradReverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, lambd):
        ctx.lambd = lambd
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.neg() * ctx.lambd, None


class DomainAdversarialNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
        self.label_head = nn.Linear(16, 3)
        self.domain_head = nn.Sequential(nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 2))

    def forward(self, x, lambd: float = 0.3):
        feats = self.features(x)
        class_logits = self.label_head(feats)
        domain_logits = self.domain_head(GradReverse.apply(feats, lambd))
        return class_logits, domain_logits


def make_model():
    torch.manual_seed(0)
    return DomainAdversarialNet().train()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(4, 8, generator=g),)


EXPECTED_GRAPHS = 1
GRADIENTS = True  # the harness also compares parameter gradients of sum(outputs)
