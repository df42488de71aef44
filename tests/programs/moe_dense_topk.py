"""A Mixture-of-Experts layer with top-k gating computed densely: every expert runs, weights via topk + scatter."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Expert(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class DenseMoE(nn.Module):
    def __init__(self, dim=8, num_experts=4, k=2):
        super().__init__()
        self.k = k
        self.gate = nn.Linear(dim, num_experts, bias=False)
        self.experts = nn.ModuleList([Expert(dim, 16) for _ in range(num_experts)])

    def forward(self, x):
        logits = self.gate(x)
        topk_vals, topk_idx = logits.topk(self.k, dim=-1)
        weights = torch.zeros_like(logits).scatter(-1, topk_idx, F.softmax(topk_vals, dim=-1))
        expert_out = torch.stack([e(x) for e in self.experts], dim=-2)
        out = (weights.unsqueeze(-1) * expert_out).sum(dim=-2)
        # load-balancing auxiliary loss (Switch Transformer style)
        density = F.one_hot(topk_idx[..., 0], logits.size(-1)).float().mean(dim=(0, 1))
        aux_loss = (density * F.softmax(logits, dim=-1).mean(dim=(0, 1))).sum() * logits.size(-1)
        return out, aux_loss


def make_model():
    torch.manual_seed(0)
    return DenseMoE().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 5, 8, generator=g),)


EXPECTED_GRAPHS = 1
