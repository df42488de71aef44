"""A model that reads a module-level CONFIG dict (as many research repos do) to choose layers and constants."""
import torch
import torch.nn as nn

CONFIG = {
    "use_residual": True,
    "norm": "layer",
    "dropout": 0.1,
    "eps": 1e-5,
    "scale": 0.5,
}


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim, eps=CONFIG["eps"]) if CONFIG["norm"] == "layer" else nn.Identity()
        self.drop = nn.Dropout(CONFIG["dropout"])

    def forward(self, x):
        h = self.drop(torch.tanh(self.fc(self.norm(x))))
        if CONFIG["use_residual"]:
            h = x + CONFIG["scale"] * h
        return h


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(Block(10), Block(10))

    def forward(self, x):
        return self.blocks(x)


def make_model():
    torch.manual_seed(0)
    return Net().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(3, 10, generator=g),)


EXPECTED_GRAPHS = 1
