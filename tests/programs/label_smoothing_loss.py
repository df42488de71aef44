"""A label-smoothing cross-entropy (true_dist built with fill_ and scatter_ under no_grad) after a small MLP."""
import torch
import torch.nn as nn


class LabelSmoothingLoss(nn.Module):
    def __init__(self, classes, smoothing=0.1, dim=-1):
        super().__init__()
        self.confidence = 1.0 - smoothing
        self.smoothing = smoothing
        self.cls = classes
        self.dim = dim

    def forward(self, pred, target):
        pred = pred.log_softmax(dim=self.dim)
        with torch.no_grad():
            true_dist = torch.zeros_like(pred)
            true_dist.fill_(self.smoothing / (self.cls - 1))
            true_dist.scatter_(1, target.data.unsqueeze(1), self.confidence)
        return torch.mean(torch.sum(-true_dist * pred, dim=self.dim))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 5))
        self.loss_fn = LabelSmoothingLoss(5)

    def forward(self, x, y):
        return self.loss_fn(self.mlp(x), y)


def make_model():
    torch.manual_seed(0)
    return Model().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(6, 8, generator=g), torch.randint(0, 5, (6,), generator=g))


EXPECTED_GRAPHS = 1
