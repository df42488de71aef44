"""An autoencoder whose decoder reuses the encoder weights transposed (F.linear with weight.t())."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class TiedAutoencoder(nn.Module):
    def __init__(self, dims=(24, 12, 6)):
        super().__init__()
        self.encoders = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.decoder_biases = nn.ParameterList(nn.Parameter(torch.zeros(a)) for a in dims[:-1])

    def forward(self, x):
        h = x
        for enc in self.encoders:
            h = torch.sigmoid(enc(h))
        code = h
        for enc, bias in zip(reversed(self.encoders), reversed(list(self.decoder_biases))):
            h = torch.sigmoid(F.linear(h, enc.weight.t(), bias))
        return h, code


def make_model():
    torch.manual_seed(0)
    return TiedAutoencoder().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(4, 24, generator=g),)


EXPECTED_GRAPHS = 1
