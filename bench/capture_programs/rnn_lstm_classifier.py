"""A text classifier as in countless tutorials: embedding, ``nn.LSTM(batch_first=True)``,
last hidden state into a linear head."""

import torch
from torch import nn


class LSTMClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(20, 6)
        self.lstm = nn.LSTM(6, 8, num_layers=2, batch_first=True)
        self.fc = nn.Linear(8, 3)

    def forward(self, tokens):
        out, (h_n, _c_n) = self.lstm(self.embedding(tokens))
        return self.fc(h_n[-1]), out[:, -1]


def make_model():
    torch.manual_seed(0)
    return LSTMClassifier().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(0, 20, (3, 5), generator=g),)


EXPECTED_GRAPHS = 1
