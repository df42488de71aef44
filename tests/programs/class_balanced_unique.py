"""A class-balanced loss whose weights come from torch.unique(labels, return_counts=True) on each batch."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class BalancedClassifier(nn.Module):
    def __init__(self, num_classes=4):
        super().__init__()
        self.num_classes = num_classes
        self.fc = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, num_classes))

    def forward(self, x, y):
        logits = self.fc(x)
        classes, counts = torch.unique(y, return_counts=True)  # GRAPH: FG203
        weights = torch.zeros(self.num_classes).index_put((classes,), counts.float().reciprocal())
        weights = weights / weights.sum() * self.num_classes
        return F.cross_entropy(logits, y, weight=weights)


def make_model():
    torch.manual_seed(0)
    return BalancedClassifier().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    y = torch.cat([torch.randperm(8, generator=g) % 4, torch.randint(0, 4, (2,), generator=g)])
    return (torch.randn(10, 6, generator=g), y)


EXPECTED_GRAPHS = 1
EXPECTED_MONITOR_RUNS = None  # the class counts change per batch
