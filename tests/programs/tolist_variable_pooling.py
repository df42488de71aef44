"""Mean pooling over variable-length sequences with a Python loop over lengths.tolist()."""
import torch
import torch.nn as nn


class SentenceEncoder(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, 2)

    def forward(self, x, lengths):
        h = torch.tanh(self.proj(x))
        pooled = []
        for i, n in enumerate(lengths.tolist()):  # CHECK: FG202
            pooled.append(h[i, :n].mean(dim=0))
        return self.out(torch.stack(pooled))


def make_model():
    torch.manual_seed(0)
    return SentenceEncoder().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(3, 6, 8, generator=g), torch.randint(1, 7, (3,), generator=g))


# lengths is an input: read in front of the graph, so one graph per record.
EXPECTED_GRAPHS = 1
EXPECTED_MONITOR_RUNS = None  # the lengths differ per batch
