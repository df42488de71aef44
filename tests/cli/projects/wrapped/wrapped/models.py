"""Models an ordinary project would hand to ``fullgraph compile``.

- ``sliced``: a small transformer-style encoder that slices its input
  (``x[:, :3]``) and a learned position table (``self.pos[:, :s]``);
- ``function_of_a_model``: a plain function that takes a model with
  submodules as its first argument;
- ``write_then_branch``: a model that writes to stdout (and prints), then
  branches on its data, so a replay that took the other branch misses after
  the write;
- ``activation_by_name``: a model holding a function of the program called
  ``compile``, a name the generated module needs for itself.
"""

import sys

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.mlp = nn.Sequential(
            nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width)
        )

    def forward(self, h):
        return h + self.mlp(self.norm(h))


class SlicedEncoder(nn.Module):
    def __init__(self, width: int = 16, max_len: int = 32):
        super().__init__()
        self.embed = nn.Linear(8, width)
        self.pos = nn.Parameter(torch.randn(1, max_len, width) * 0.02)
        self.blocks = nn.ModuleList([Block(width) for _ in range(2)])
        self.head = nn.Linear(width, 4)

    def forward(self, x):
        s = x.shape[1]
        prefix = x[:, :3].mean(dim=1, keepdim=True)  # the first tokens, as a summary
        h = self.embed(x - prefix) + self.pos[:, :s]
        for block in self.blocks:
            h = block(h)
        return self.head(h[:, 0])


def sliced():
    torch.manual_seed(0)
    return SlicedEncoder().eval(), (torch.randn(2, 10, 8),)


def classify(model, x):
    """A function entrypoint: the model is an argument, not the compiled target."""
    return model(x).softmax(dim=-1)


def function_of_a_model():
    torch.manual_seed(0)
    return classify, (SlicedEncoder().eval(), torch.randn(2, 10, 8))


class WriteThenBranch(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        h = self.fc(x)
        sys.stdout.write(f"forward of a batch of {x.shape[0]}\n")  # made before the branch
        print("print of a batch of", x.shape[0])  # held back until the mid-guards pass
        if h.mean() > 0:
            return torch.relu(h)
        return torch.tanh(h)


def write_then_branch():
    torch.manual_seed(0)
    return WriteThenBranch().eval(), (torch.randn(4, 8),)


def compile(x):  # a function of the program named like the generated module's own
    return x * 2


class ActivationByName(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.act = compile  # guarded by identity: `M.act is compile`

    def forward(self, x):
        return self.act(self.fc(x))


def activation_by_name():
    torch.manual_seed(0)
    return ActivationByName().eval(), (torch.randn(4, 8),)
