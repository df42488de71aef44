"""CapsNet digit capsules: squash non-linearity and dynamic routing for a fixed number of iterations."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def squash(s, dim=-1):
    squared_norm = (s ** 2).sum(dim=dim, keepdim=True)
    return squared_norm / (1 + squared_norm) * s / (torch.sqrt(squared_norm) + 1e-8)


class DigitCaps(nn.Module):
    def __init__(self, in_caps=6, in_dim=4, out_caps=3, out_dim=5, routing_iters=3):
        super().__init__()
        self.routing_iters = routing_iters
        self.W = nn.Parameter(0.1 * torch.randn(1, in_caps, out_caps, out_dim, in_dim))

    def forward(self, u):
        batch = u.size(0)
        u = u[:, :, None, :, None]
        u_hat = torch.matmul(self.W, u).squeeze(-1)
        b = torch.zeros(batch, u_hat.size(1), u_hat.size(2))
        for i in range(self.routing_iters):
            c = F.softmax(b, dim=2)
            s = (c.unsqueeze(-1) * u_hat).sum(dim=1)
            v = squash(s)
            if i < self.routing_iters - 1:
                b = b + (u_hat * v.unsqueeze(1)).sum(dim=-1)
        return v, v.norm(dim=-1)


def make_model():
    torch.manual_seed(0)
    return DigitCaps().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (squash(torch.randn(2, 6, 4, generator=g)),)


EXPECTED_GRAPHS = 1
