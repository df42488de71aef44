"""Attention written with torch.einsum plus a learned relative-position bias table indexed by a buffer."""
import torch
import torch.nn as nn


class RelPosAttention(nn.Module):
    def __init__(self, dim=12, heads=3, seq_len=5):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)
        self.rel_bias = nn.Parameter(torch.randn(2 * seq_len - 1, heads) * 0.1)
        coords = torch.arange(seq_len)
        rel_index = coords[:, None] - coords[None, :] + seq_len - 1
        self.register_buffer("rel_index", rel_index)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, -1).unbind(dim=2)
        scores = torch.einsum("bihd,bjhd->bhij", q, k) / q.shape[-1] ** 0.5
        bias = self.rel_bias[self.rel_index[:n, :n]].permute(2, 0, 1)
        attn = (scores + bias.unsqueeze(0)).softmax(dim=-1)
        out = torch.einsum("bhij,bjhd->bihd", attn, v).reshape(b, n, -1)
        return self.proj(out)


def make_model():
    torch.manual_seed(0)
    return RelPosAttention().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 5, 12, generator=g),)


EXPECTED_GRAPHS = 1
