"""Variable-length batches: ``pack_padded_sequence`` with a lengths tensor, an ``nn.GRU``,
and ``pad_packed_sequence`` back (speech / NMT encoders)."""

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


class PackedGRUEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(4, 6, batch_first=True, bidirectional=True)

    def forward(self, x, lengths):
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, h_n = self.gru(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.size(1))
        return out, torch.cat([h_n[0], h_n[1]], dim=-1)


def make_model():
    torch.manual_seed(0)
    return PackedGRUEncoder().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, 7, (3,), generator=g)
    lengths[0] = 6
    return torch.randn(3, 6, 4, generator=g), lengths


EXPECTED_GRAPHS = 1
