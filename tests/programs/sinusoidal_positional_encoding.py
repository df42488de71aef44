"""The "Annotated Transformer" PositionalEncoding: a sinusoid table built with math.log, added to scaled embeddings."""
import math

import torch
import torch.nn as nn


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=32):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * -(math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0))

    def forward(self, x):
        x = x + self.pe[:, : x.size(1)].requires_grad_(False)
        return self.dropout(x)


class Embeddings(nn.Module):
    def __init__(self, d_model, vocab):
        super().__init__()
        self.lut = nn.Embedding(vocab, d_model)
        self.d_model = d_model

    def forward(self, x):
        return self.lut(x) * math.sqrt(self.d_model)


class EmbedWithPE(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = Embeddings(16, 30)
        self.pos = PositionalEncoding(16)
        self.out = nn.Linear(16, 30)

    def forward(self, tokens):
        return self.out(self.pos(self.embed(tokens)))


def make_model():
    torch.manual_seed(0)
    return EmbedWithPE().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(0, 30, (2, 9), generator=g),)


EXPECTED_GRAPHS = 1
