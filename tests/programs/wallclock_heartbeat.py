"""A serving model that stamps time.time() into a stats dict mid-forward, for a watchdog that checks it is alive."""
import time

import torch
import torch.nn as nn


class ServedModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(8, 16), nn.GELU())
        self.decoder = nn.Linear(16, 8)
        self.stats = {"last_forward_at": None, "requests": 0}

    def forward(self, x):
        h = self.encoder(x)
        self.stats["last_forward_at"] = time.time()  # BREAK: FG201
        return self.decoder(h) + x


def make_model():
    torch.manual_seed(0)
    return ServedModel().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 8, generator=g),)


EXPECTED_GRAPHS = 2


def observe_state(model):
    """The heartbeat was stamped by the last call (its value differs run to run)."""
    return isinstance(model.stats["last_forward_at"], float)
