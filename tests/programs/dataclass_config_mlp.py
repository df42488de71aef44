"""An MLP configured by a dataclass read inside forward (activation name, residual flag, temperature)."""
from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ModelConfig:
    in_dim: int = 8
    hidden_dims: list = field(default_factory=lambda: [16, 16])
    out_dim: int = 3
    activation: str = "gelu"
    residual: bool = True
    temperature: float = 2.0


ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu, "silu": F.silu}


class ConfigurableMLP(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        dims = [cfg.in_dim] + cfg.hidden_dims
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.out = nn.Linear(dims[-1], cfg.out_dim)

    def forward(self, x):
        act = ACTIVATIONS[self.cfg.activation]
        for i, layer in enumerate(self.layers):
            h = act(layer(x))
            x = x + h if (self.cfg.residual and h.shape == x.shape) else h
        return F.softmax(self.out(x) / self.cfg.temperature, dim=-1)


def make_model():
    torch.manual_seed(0)
    return ConfigurableMLP(ModelConfig()).eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(4, 8, generator=g),)


EXPECTED_GRAPHS = 1
