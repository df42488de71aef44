"""A BCE helper that validates probabilities with two tensor-data checks joined by `and` in one assert."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(7, 1)

    def forward(self, x, target):
        probs = torch.sigmoid(self.fc(x)).squeeze(-1)
        assert (probs >= 0).all() and (probs <= 1).all(), "probabilities out of range"  # BREAK: FG202; CHECK: FG202
        loss = F.binary_cross_entropy(probs, target)
        return loss, probs


def make_model():
    torch.manual_seed(0)
    return Scorer().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(5, 7, generator=g), torch.randint(0, 2, (5,), generator=g).float())


# Both checks read tensor data: graph, first check, graph.  The second comparison needs
# only probs, so it runs in front of the second graph instead of splitting it.
EXPECTED_GRAPHS = 2
