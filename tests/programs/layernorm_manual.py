"""A hand-written LayerNorm (mean/var over the last dim, unbiased=False) used like in old BERT ports."""
import torch
import torch.nn as nn


class LayerNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-12):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.bias = nn.Parameter(torch.zeros(hidden_size))
        self.variance_epsilon = eps

    def forward(self, x):
        u = x.mean(-1, keepdim=True)
        s = (x - u).pow(2).mean(-1, keepdim=True)
        x = (x - u) / torch.sqrt(s + self.variance_epsilon)
        return self.weight * x + self.bias


class Pooler(nn.Module):
    def __init__(self, hidden=12):
        super().__init__()
        self.norm = LayerNorm(hidden)
        self.dense = nn.Linear(hidden, hidden)
        self.activation = nn.Tanh()

    def forward(self, hidden_states):
        first_token_tensor = self.norm(hidden_states)[:, 0]
        return self.activation(self.dense(first_token_tensor))


def make_model():
    torch.manual_seed(0)
    return Pooler().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 4, 12, generator=g),)


EXPECTED_GRAPHS = 1
