"""Spectral normalisation by power iteration in a while loop that stops on err.item() <= tol or max_iter."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SpectralNormLinear(nn.Module):
    def __init__(self, dim=8, max_iter=3, tol=1e-6):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.max_iter, self.tol = max_iter, tol

    def forward(self, x):
        W = self.fc.weight
        v = F.normalize(x.mean(dim=0), dim=0)
        err = torch.ones(())
        it = 0
        while it < self.max_iter and err.item() > self.tol:  # BREAK: FG202; CHECK: FG202
            u = F.normalize(W @ v, dim=0)
            v_new = F.normalize(W.t() @ u, dim=0)
            err = (v_new - v).norm()
            v = v_new
            it += 1
        sigma = u @ W @ v
        return F.linear(x, W / sigma, self.fc.bias)


def make_model():
    torch.manual_seed(0)
    return SpectralNormLinear().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(4, 8, generator=g),)


# err.item() is read before each of the 3 iterations (the 4th test stops on `it`); the
# first read (of torch.ones) runs in front of the graph, the other two split it.
EXPECTED_GRAPHS = 3
