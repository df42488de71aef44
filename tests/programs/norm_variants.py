"""A style-transfer-ish conv net that picks GroupNorm, InstanceNorm or BatchNorm from a string per layer."""
import torch
import torch.nn as nn


def get_norm(kind, channels):
    if kind == "group":
        return nn.GroupNorm(num_groups=2, num_channels=channels)
    elif kind == "instance":
        return nn.InstanceNorm2d(channels, affine=True)
    elif kind == "batch":
        return nn.BatchNorm2d(channels)
    raise ValueError(f"unknown norm {kind}")


class ConvNormAct(nn.Module):
    def __init__(self, cin, cout, norm):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1, padding_mode="reflect")
        self.norm = get_norm(norm, cout)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(self.norm(self.conv(x)))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(
            ConvNormAct(3, 8, "group"), ConvNormAct(8, 8, "instance"), ConvNormAct(8, 4, "batch")
        )
        self.ln = nn.LayerNorm([4, 6, 6])

    def forward(self, x):
        return self.ln(self.layers(x))


def make_model():
    torch.manual_seed(0)
    return Net().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 3, 6, 6, generator=g),)


EXPECTED_GRAPHS = 1
