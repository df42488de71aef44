"""A CNN whose author prints intermediate shapes while debugging (print inside forward)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(4, 8, 3)
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        print("after conv1:", x.shape)  # DEFER: FG201
        x = F.relu(self.conv2(x))
        x = torch.flatten(F.adaptive_max_pool2d(x, 1), 1)
        return self.fc(x)


def make_model():
    torch.manual_seed(0)
    return Net().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 1, 10, 10, generator=g),)


# The print shows only a shape: made after the graph, which it does not split.
EXPECTED_GRAPHS = 1
