"""A pre-LayerNorm transformer encoder (ModuleList of blocks) with a padding mask passed as an argument."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class FeedForward(nn.Module):
    def __init__(self, dim, hidden_dim, dropout=0.1):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(dim, hidden_dim), nn.GELU(), nn.Dropout(dropout), nn.Linear(hidden_dim, dim)
        )

    def forward(self, x):
        return self.net(x)


class Attention(nn.Module):
    def __init__(self, dim, heads=2):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x, pad_mask):
        b, n, d = x.shape
        qkv = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (t.reshape(b, n, self.heads, -1).permute(0, 2, 1, 3) for t in qkv)
        dots = torch.matmul(q, k.transpose(-1, -2)) * self.scale
        dots = dots.masked_fill(pad_mask[:, None, None, :], -1e9)
        attn = dots.softmax(dim=-1)
        out = torch.matmul(attn, v).permute(0, 2, 1, 3).reshape(b, n, d)
        return self.to_out(out)


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = Attention(dim)
        self.norm2 = nn.LayerNorm(dim)
        self.ff = FeedForward(dim, dim * 2)

    def forward(self, x, pad_mask):
        x = x + self.attn(self.norm1(x), pad_mask)
        return x + self.ff(self.norm2(x))


class Encoder(nn.Module):
    def __init__(self, dim=16, depth=2):
        super().__init__()
        self.layers = nn.ModuleList([Block(dim) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)

    def forward(self, x, pad_mask):
        for layer in self.layers:
            x = layer(x, pad_mask)
        return F.normalize(self.norm(x), dim=-1)


def make_model():
    torch.manual_seed(0)
    return Encoder().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 5, 16, generator=g)
    pad_mask = torch.zeros(2, 5, dtype=torch.bool)
    pad_mask[1, 3:] = True
    return (x, pad_mask)


EXPECTED_GRAPHS = 1
