"""Token pruning: keep the tokens whose score is positive, found with torch.nonzero, and pool only those."""
import torch
import torch.nn as nn


class TokenPruner(nn.Module):
    def __init__(self, dim=6):
        super().__init__()
        self.score = nn.Linear(dim, 1)
        self.fc = nn.Linear(dim, dim)

    def forward(self, tokens):
        scores = self.score(tokens).squeeze(-1)
        keep = torch.nonzero(scores > 0).squeeze(1)  # GRAPH: FG203
        kept = tokens.index_select(0, keep)
        return torch.relu(self.fc(kept)).sum(dim=0) / tokens.shape[0]


def make_model():
    torch.manual_seed(0)
    return TokenPruner().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(10, 6, generator=g),)


EXPECTED_GRAPHS = 1
# How many tokens survive changes with the data, so how often the runtime
# re-monitors depends on its dynamic-shape policy: not asserted.
EXPECTED_MONITOR_RUNS = None
