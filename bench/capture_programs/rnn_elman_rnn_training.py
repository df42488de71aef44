"""A char-level ``nn.RNN(nonlinearity="tanh")`` language model with a hidden state passed
in, trained with teacher forcing (training step: gradients of the parameters compared)."""

import torch
from torch import nn


class CharRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(6, 8, num_layers=1, nonlinearity="tanh", batch_first=True)
        self.decoder = nn.Linear(8, 6)

    def forward(self, x, hidden):
        out, hidden = self.rnn(x, hidden)
        return self.decoder(out.reshape(-1, 8)), hidden


def make_model():
    torch.manual_seed(0)
    return CharRNN().train()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(2, 4, 6, generator=g), torch.zeros(1, 2, 8)


EXPECTED_GRAPHS = 1
GRADIENTS = True
