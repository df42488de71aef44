"""Feature hashing for a categorical field: a stable zlib.crc32 bucket (Python's hash() is salted) picks an embedding."""
import zlib

import torch
import torch.nn as nn


class HashedFieldModel(nn.Module):
    def __init__(self, field_value="country=NZ", num_buckets=16, dim=4):
        super().__init__()
        self.field_value = field_value
        self.num_buckets = num_buckets
        self.proj = nn.Linear(6, 8)
        self.buckets = nn.Embedding(num_buckets, dim)
        self.out = nn.Linear(8 + dim, 2)

    def forward(self, dense):
        h = torch.relu(self.proj(dense))
        bucket = zlib.crc32(self.field_value.encode("utf-8")) % self.num_buckets  # BREAK: FG204
        field = self.buckets.weight[bucket].expand(h.size(0), -1)
        return self.out(torch.cat([h, field], dim=1))


def make_model():
    torch.manual_seed(0)
    return HashedFieldModel().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(3, 6, generator=g),)


EXPECTED_GRAPHS = 2
