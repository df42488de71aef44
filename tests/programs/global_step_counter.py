"""A training-script pattern: a module-level global_step incremented in forward, gating a rarely taken branch."""
import torch
import torch.nn as nn

global_step = 0
LOG_EVERY = 1000


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 1))
        self.latest_norm = None

    def forward(self, x):
        global global_step
        global_step += 1
        out = self.net(x)
        if global_step % LOG_EVERY == 0:
            self.latest_norm = out.detach().norm()
        return out


def make_model():
    torch.manual_seed(0)
    return Model().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(4, 5, generator=g),)


EXPECTED_GRAPHS = 1
# The global changes on every call: without lifting no record is ever reused
# (3 monitoring runs); lifting it into an input after it changes once needs 2.
EXPECTED_MONITOR_RUNS = None
