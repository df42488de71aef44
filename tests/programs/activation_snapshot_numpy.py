"""A model that keeps a numpy copy of an activation (h.detach().cpu().numpy()) for later visualisation."""
import torch
import torch.nn as nn


class Visualised(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 3, 3, padding=1)
        self.fc = nn.Linear(3, 2)
        self.last_activation = None

    def forward(self, x):
        h = torch.relu(self.conv(x))
        self.last_activation = h[0].detach().cpu().numpy()  # BREAK: FG202
        return self.fc(h.mean(dim=(2, 3)))


def make_model():
    torch.manual_seed(0)
    return Visualised().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 1, 5, 5, generator=g),)


EXPECTED_GRAPHS = 2


def observe_state(model):
    """The snapshot kept by the last call."""
    return torch.from_numpy(model.last_activation)
