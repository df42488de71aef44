"""A model that builds constant tables with numpy in __init__ (positional table, DCT matrix) and uses them as buffers."""
import numpy as np
import torch
import torch.nn as nn


def get_sinusoid_encoding_table(n_position, d_hid):
    def cal_angle(position, hid_idx):
        return position / np.power(10000, 2 * (hid_idx // 2) / d_hid)

    table = np.array([[cal_angle(pos, j) for j in range(d_hid)] for pos in range(n_position)])
    table[:, 0::2] = np.sin(table[:, 0::2])
    table[:, 1::2] = np.cos(table[:, 1::2])
    return torch.FloatTensor(table)


def dct_matrix(n):
    k = np.arange(n)[:, None]
    i = np.arange(n)[None, :]
    m = np.cos(np.pi * (2 * i + 1) * k / (2 * n)) * np.sqrt(2.0 / n)
    m[0] /= np.sqrt(2.0)
    return torch.from_numpy(m.astype(np.float32))


class Model(nn.Module):
    def __init__(self, seq_len=6, dim=8):
        super().__init__()
        self.register_buffer("pos_table", get_sinusoid_encoding_table(seq_len, dim))
        self.register_buffer("dct", dct_matrix(dim))
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        x = x + self.pos_table[: x.size(1)]
        x = x @ self.dct.t()
        return self.proj(x)


def make_model():
    torch.manual_seed(0)
    return Model().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 6, 8, generator=g),)


EXPECTED_GRAPHS = 1
