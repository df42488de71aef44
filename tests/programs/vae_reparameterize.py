"""The PyTorch-examples VAE: encode to mu/logvar, reparameterize with noise passed in, decode; returns a tuple."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class VAE(nn.Module):
    def __init__(self, in_dim=20, hidden=12, latent=4):
        super().__init__()
        self.fc1 = nn.Linear(in_dim, hidden)
        self.fc21 = nn.Linear(hidden, latent)
        self.fc22 = nn.Linear(hidden, latent)
        self.fc3 = nn.Linear(latent, hidden)
        self.fc4 = nn.Linear(hidden, in_dim)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar, eps):
        std = torch.exp(0.5 * logvar)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x, eps):
        mu, logvar = self.encode(x.view(-1, 20))
        z = self.reparameterize(mu, logvar, eps)
        recon = self.decode(z)
        bce = F.binary_cross_entropy(recon, x.view(-1, 20), reduction="sum")
        kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        return recon, mu, logvar, bce + kld


def make_model():
    torch.manual_seed(0)
    return VAE().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(3, 20, generator=g), torch.randn(3, 4, generator=g))


EXPECTED_GRAPHS = 1
