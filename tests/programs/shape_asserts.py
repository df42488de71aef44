"""A model that validates argument shapes with assert and raise on shapes only (no tensor data is read)."""
import torch
import torch.nn as nn


class Conv1dClassifier(nn.Module):
    def __init__(self, in_channels=4, seq_len=10):
        super().__init__()
        self.in_channels = in_channels
        self.seq_len = seq_len
        self.conv = nn.Conv1d(in_channels, 6, 3, padding=1)
        self.fc = nn.Linear(6 * seq_len, 2)

    def forward(self, x):
        assert x.dim() == 3, f"expected (batch, channels, time), got {tuple(x.shape)}"
        assert x.shape[1] == self.in_channels, "wrong number of channels"
        if x.size(-1) != self.seq_len:
            raise ValueError(f"sequence length must be {self.seq_len}")
        assert x.dtype == torch.float32
        h = torch.relu(self.conv(x))
        return self.fc(h.flatten(1))


def make_model():
    torch.manual_seed(0)
    return Conv1dClassifier().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(3, 4, 10, generator=g),)


EXPECTED_GRAPHS = 1
