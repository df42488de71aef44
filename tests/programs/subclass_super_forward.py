"""A subclass that extends its parent's forward via super().forward() and a @property, as in model-zoo variants."""
import torch
import torch.nn as nn


class BaseClassifier(nn.Module):
    def __init__(self, in_dim=8, hidden=12, num_classes=3):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU())
        self.fc = nn.Linear(hidden, num_classes)

    def forward(self, x):
        return self.fc(self.features(x))


class CalibratedClassifier(BaseClassifier):
    def __init__(self):
        super().__init__()
        self.log_scale = nn.Parameter(torch.tensor(0.3))

    @property
    def scale(self):
        return self.log_scale.exp()

    def forward(self, x):
        logits = super().forward(x)
        return logits * self.scale


def make_model():
    torch.manual_seed(0)
    return CalibratedClassifier().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(3, 8, generator=g),)


EXPECTED_GRAPHS = 1
