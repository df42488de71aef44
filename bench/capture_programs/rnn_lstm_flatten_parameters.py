"""A bidirectional LSTM tagger that calls ``self.lstm.flatten_parameters()`` at the top of
forward (the DataParallel habit) and passes explicit zero initial states."""

import torch
from torch import nn


class BiLSTMTagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = 5
        self.lstm = nn.LSTM(4, self.hidden, bidirectional=True)
        self.tag = nn.Linear(2 * self.hidden, 3)

    def forward(self, x):  # x: (seq, batch, feature)
        self.lstm.flatten_parameters()
        h0 = x.new_zeros(2, x.size(1), self.hidden)
        c0 = x.new_zeros(2, x.size(1), self.hidden)
        out, _ = self.lstm(x, (h0, c0))
        return torch.log_softmax(self.tag(out), dim=-1)


def make_model():
    torch.manual_seed(0)
    return BiLSTMTagger().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(5, 2, 4, generator=g),)


EXPECTED_GRAPHS = 1
