"""A sparse top-1 MoE that dispatches tokens per expert with torch.where(mask) in a Python loop (Switch-style)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SparseMoE(nn.Module):
    def __init__(self, dim=6, num_experts=3):
        super().__init__()
        self.num_experts = num_experts
        self.router = nn.Linear(dim, num_experts)
        self.experts = nn.ModuleList(
            nn.Sequential(nn.Linear(dim, 12), nn.ReLU(), nn.Linear(12, dim)) for _ in range(num_experts)
        )

    def forward(self, x):
        tokens = x.reshape(-1, x.shape[-1])
        probs = F.softmax(self.router(tokens), dim=-1)
        gate, expert_index = probs.max(dim=-1)
        out = torch.zeros_like(tokens)
        for e in range(self.num_experts):
            idx = torch.where(expert_index == e)[0]  # BREAK: FG203
            if idx.numel() == 0:
                continue
            out = out.index_add(0, idx, self.experts[e](tokens[idx]) * gate[idx, None])
        return out.reshape(x.shape)


def make_model():
    torch.manual_seed(0)
    return SparseMoE().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 8, 6, generator=g),)


# One dispatch per expert: the graph is split three times.
EXPECTED_GRAPHS = 4
EXPECTED_MONITOR_RUNS = None  # tokens per expert vary with the data
