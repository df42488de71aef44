"""An evaluation step returning a metrics dict whose accuracy is converted to a Python float with .item()."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 4))

    def forward(self, x, y):
        logits = self.net(x)
        loss = F.cross_entropy(logits, y)
        acc = (logits.argmax(dim=-1) == y).float().mean()
        return {"loss": loss, "accuracy": acc.item()}  # BREAK: FG202


def make_model():
    torch.manual_seed(0)
    return Classifier().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(8, 5, generator=g), torch.randint(0, 4, (8,), generator=g))


# The read is the last thing the function does, so there is one graph.
EXPECTED_GRAPHS = 1
