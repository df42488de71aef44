"""A conv net run in training mode: BatchNorm uses batch statistics and updates its running buffers in place."""
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4, momentum=0.5)
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x)))
        out = self.fc(x.mean(dim=(2, 3)))
        # Returned so that a caller (and the corpus test) sees the in-place buffer updates.
        return out, self.bn.running_mean.clone(), self.bn.num_batches_tracked.clone()


def make_model():
    torch.manual_seed(0)
    return Net().train()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(4, 3, 6, 6, generator=g),)


EXPECTED_GRAPHS = 1


def observe_state(model):
    """BatchNorm's buffers after three training-mode batches."""
    return dict(model.bn.named_buffers())
