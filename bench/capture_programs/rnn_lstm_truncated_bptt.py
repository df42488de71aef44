"""Truncated backpropagation through time (the PyTorch word-language-model example): the
LSTM's hidden state is kept on the module between calls, detached ("repackaged"), so each
call starts from the last one's state; a training step."""

import torch
from torch import nn


class StatefulLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(3, 5, num_layers=2, dropout=0.2, batch_first=True)
        self.decoder = nn.Linear(5, 3)
        self.hidden = None

    def repackage_hidden(self, h):
        if isinstance(h, torch.Tensor):
            return h.detach()
        return tuple(self.repackage_hidden(v) for v in h)

    def forward(self, x):
        out, hidden = self.lstm(x, self.hidden)
        self.hidden = self.repackage_hidden(hidden)
        return self.decoder(out)


def make_model():
    torch.manual_seed(0)
    return StatefulLM().train()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 4, 3, generator=g),)


def observe_state(model):
    return {"hidden": model.hidden}


EXPECTED_GRAPHS = 1
EXPECTED_MONITOR_RUNS = None  # the first call has no hidden state, the later ones do
GRADIENTS = True
