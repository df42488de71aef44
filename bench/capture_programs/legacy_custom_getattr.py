"""A wrapper module with its own ``__getattr__`` that forwards unknown attributes to a
config dict and then to the wrapped model (DataParallel / EMA wrappers, HF-style configs)."""

import torch
from torch import nn


class Config(dict):
    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class Wrapper(nn.Module):
    def __init__(self, module, config):
        super().__init__()
        self.module = module
        self.config = config

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            pass
        config = self.__dict__["config"]
        if name in config:
            return config[name]
        return getattr(super().__getattr__("module"), name)

    def forward(self, x):
        h = self.encoder(x) * self.scale  # encoder comes from the module, scale from config
        if self.use_residual:
            h = h + x
        return self.head(h / self.config.temperature)


class Inner(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(5, 5)
        self.head = nn.Linear(5, 2)


def make_model():
    torch.manual_seed(0)
    config = Config(scale=0.5, use_residual=True, temperature=2.0)
    return Wrapper(Inner(), config).eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(3, 5, generator=g),)


EXPECTED_GRAPHS = 1
