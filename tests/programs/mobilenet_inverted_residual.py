"""MobileNetV2 inverted residual blocks: expand, depthwise conv, ReLU6, linear projection."""
import torch
import torch.nn as nn


def _make_divisible(v, divisor=4, min_value=None):
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class ConvBNReLU(nn.Sequential):
    def __init__(self, in_planes, out_planes, kernel_size=3, stride=1, groups=1):
        padding = (kernel_size - 1) // 2
        super().__init__(
            nn.Conv2d(in_planes, out_planes, kernel_size, stride, padding, groups=groups, bias=False),
            nn.BatchNorm2d(out_planes),
            nn.ReLU6(inplace=True),
        )


class InvertedResidual(nn.Module):
    def __init__(self, inp, oup, stride, expand_ratio):
        super().__init__()
        hidden_dim = int(round(inp * expand_ratio))
        self.use_res_connect = stride == 1 and inp == oup
        layers = []
        if expand_ratio != 1:
            layers.append(ConvBNReLU(inp, hidden_dim, kernel_size=1))
        layers.extend([
            ConvBNReLU(hidden_dim, hidden_dim, stride=stride, groups=hidden_dim),
            nn.Conv2d(hidden_dim, oup, 1, 1, 0, bias=False),
            nn.BatchNorm2d(oup),
        ])
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        if self.use_res_connect:
            return x + self.conv(x)
        return self.conv(x)


class MobileNetTiny(nn.Module):
    def __init__(self, width_mult=1.0):
        super().__init__()
        c = _make_divisible(8 * width_mult)
        self.features = nn.Sequential(
            ConvBNReLU(3, c, stride=2),
            InvertedResidual(c, c, 1, expand_ratio=1),
            InvertedResidual(c, 12, 2, expand_ratio=6),
            InvertedResidual(12, 12, 1, expand_ratio=6),
        )
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(12, 3))

    def forward(self, x):
        x = self.features(x)
        x = nn.functional.adaptive_avg_pool2d(x, 1).reshape(x.shape[0], -1)
        return self.classifier(x)


def make_model():
    torch.manual_seed(0)
    return MobileNetTiny().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 3, 16, 16, generator=g),)


EXPECTED_GRAPHS = 1
