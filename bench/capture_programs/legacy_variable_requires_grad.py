"""Pre-0.4 code that still runs: inputs and initial states wrapped in
``torch.autograd.Variable``, and ``requires_grad`` switched off on intermediate tensors;
a training step (the mask and the initial state must stay out of the gradients)."""

import torch
from torch import nn
from torch.autograd import Variable


class AttentionPooling(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 6)
        self.score = nn.Linear(6, 1)

    def forward(self, x):
        x = Variable(x)
        mask = (x.abs().sum(-1) > 0).float()
        mask.requires_grad = False
        h0 = Variable(torch.zeros(x.size(0), x.size(2)), requires_grad=False)
        h = torch.tanh(self.proj(x)) + h0.unsqueeze(1)
        weights = torch.softmax(self.score(h).squeeze(-1) * mask, dim=1)
        return (weights.unsqueeze(-1) * h).sum(1)


def make_model():
    torch.manual_seed(0)
    return AttentionPooling().train()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(3, 4, 6, generator=g),)


EXPECTED_GRAPHS = 1
GRADIENTS = True
