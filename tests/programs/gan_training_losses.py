"""One GAN step's losses computed in a function: generator on noise, discriminator on real and fake, BCE losses."""
import torch
import torch.nn as nn
import torch.nn.functional as F

LATENT = 6


class G(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(LATENT, 16), nn.LeakyReLU(0.2), nn.Linear(16, 10), nn.Tanh())

    def forward(self, z):
        return self.net(z)


class D(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(10, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))

    def forward(self, x):
        return self.net(x)


def make_model():
    torch.manual_seed(0)
    netG, netD = G(), D()

    def gan_losses(real, z):
        fake = netG(z)
        real_label = torch.ones(real.size(0), 1)
        fake_label = torch.zeros(real.size(0), 1)
        d_real = netD(real)
        d_fake = netD(fake.detach())
        loss_d = F.binary_cross_entropy_with_logits(d_real, real_label)
        loss_d = loss_d + F.binary_cross_entropy_with_logits(d_fake, fake_label)
        loss_g = F.binary_cross_entropy_with_logits(netD(fake), real_label)
        return {"loss_d": loss_d, "loss_g": loss_g, "fake": fake}

    return gan_losses


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(4, 10, generator=g), torch.randn(4, LATENT, generator=g))


EXPECTED_GRAPHS = 1
