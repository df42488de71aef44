"""A GRU encoder unrolled over nn.GRUCell in a Python loop, hidden state from an optional argument."""
import torch
import torch.nn as nn


class GRUEncoder(nn.Module):
    def __init__(self, input_size=4, hidden_size=6):
        super().__init__()
        self.hidden_size = hidden_size
        self.cell = nn.GRUCell(input_size, hidden_size)
        self.proj = nn.Linear(hidden_size, 2)

    def forward(self, inputs, h=None):
        if h is None:
            h = inputs.new_zeros(inputs.size(1), self.hidden_size)
        for x_t in inputs.unbind(0):  # time-major, like the old seq2seq tutorials
            h = self.cell(x_t, h)
        return self.proj(h)


def make_model():
    torch.manual_seed(0)
    return GRUEncoder().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(5, 3, 4, generator=g),)


EXPECTED_GRAPHS = 1
