"""A YOLOv3-style detection layer: reshape predictions, sigmoid offsets plus a cached grid, exp(wh) * anchors."""
import torch
import torch.nn as nn


class YOLOLayer(nn.Module):
    def __init__(self, anchors, num_classes, stride):
        super().__init__()
        self.register_buffer("anchors", torch.tensor(anchors, dtype=torch.float32))
        self.na = len(anchors)
        self.no = num_classes + 5
        self.stride = stride
        self.conv = nn.Conv2d(8, self.na * self.no, 1)

    @staticmethod
    def _make_grid(nx=20, ny=20):
        yv, xv = torch.meshgrid([torch.arange(ny), torch.arange(nx)], indexing="ij")
        return torch.stack((xv, yv), 2).view((1, 1, ny, nx, 2)).float()

    def forward(self, x):
        x = self.conv(x)
        bs, _, ny, nx = x.shape
        x = x.view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
        grid = self._make_grid(nx, ny)
        y = x.sigmoid()
        xy = (y[..., 0:2] * 2.0 - 0.5 + grid) * self.stride
        wh = (y[..., 2:4] * 2) ** 2 * self.anchors.view(1, self.na, 1, 1, 2)
        y = torch.cat((xy, wh, y[..., 4:]), -1)
        return y.view(bs, -1, self.no)


class TinyYOLO(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.LeakyReLU(0.1))
        self.head = YOLOLayer([(2.0, 3.0), (4.0, 5.0)], num_classes=3, stride=2)

    def forward(self, x):
        return self.head(self.backbone(x))


def make_model():
    torch.manual_seed(0)
    return TinyYOLO().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 3, 8, 8, generator=g),)


EXPECTED_GRAPHS = 1
