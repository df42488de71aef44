"""A depth-estimation loss that averages the error only over valid pixels via boolean-mask indexing."""
import torch
import torch.nn as nn


class DepthNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 1, 1), nn.Softplus())

    def forward(self, image, target):
        pred = self.net(image)
        mask = target > 0
        diff = (pred - target).abs()
        loss = diff[mask].mean()  # GRAPH: FG203
        return loss * 10.0, pred


def make_model():
    torch.manual_seed(0)
    return DepthNet().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    image = torch.randn(2, 3, 5, 5, generator=g)
    target = torch.rand(2, 1, 5, 5, generator=g)
    target[:, :, :2] = 0.0  # rows without ground truth; the same count every batch
    return (image, target)


EXPECTED_GRAPHS = 1
