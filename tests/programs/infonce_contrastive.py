"""SimCLR's NT-Xent loss: normalised projections, similarity matrix, self-similarity masked, cross-entropy over arange labels."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SimCLR(nn.Module):
    def __init__(self, temperature=0.5):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 8))
        self.projector = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 4))
        self.temperature = temperature

    def nt_xent(self, z_i, z_j):
        batch_size = z_i.shape[0]
        z = F.normalize(torch.cat([z_i, z_j], dim=0), dim=1)
        sim = torch.mm(z, z.t()) / self.temperature
        sim.fill_diagonal_(-1e9)
        labels = torch.cat([torch.arange(batch_size, 2 * batch_size), torch.arange(0, batch_size)])
        return F.cross_entropy(sim, labels)

    def forward(self, x_i, x_j):
        z_i = self.projector(self.encoder(x_i))
        z_j = self.projector(self.encoder(x_j))
        return self.nt_xent(z_i, z_j)


def make_model():
    torch.manual_seed(0)
    return SimCLR().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(4, 10, generator=g)
    return (x, x + 0.1 * torch.randn(4, 10, generator=g))


EXPECTED_GRAPHS = 1
