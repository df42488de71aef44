"""HF-style ``gradient_checkpointing`` of transformer feed-forward blocks that have dropout:
``checkpoint(block, x, use_reentrant=False)`` in training mode, so backward recomputes the
block and must redraw the same dropout mask (checkpoint preserves the RNG state)."""

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


class FeedForward(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc1 = nn.Linear(dim, 2 * dim)
        self.dropout = nn.Dropout(0.3)
        self.fc2 = nn.Linear(2 * dim, dim)

    def forward(self, x):
        return x + self.fc2(self.dropout(torch.relu(self.fc1(x))))


class Encoder(nn.Module):
    def __init__(self, dim=6, depth=2):
        super().__init__()
        self.layers = nn.ModuleList(FeedForward(dim) for _ in range(depth))

    def forward(self, hidden_states):
        for layer in self.layers:
            hidden_states = checkpoint(layer, hidden_states, use_reentrant=False)
        return hidden_states.sum(dim=-1)


def make_model():
    torch.manual_seed(0)
    return Encoder().train()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(3, 6, generator=g),)


EXPECTED_GRAPHS = 1
GRADIENTS = True  # the harness seeds torch before each call, eager and compiled alike
