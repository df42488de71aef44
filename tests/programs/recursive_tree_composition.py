"""A recursive neural network over a parse tree given as nested tuples (Socher-style composition of child vectors)."""
import torch
import torch.nn as nn

# A fixed binary parse tree over 5 leaves: ((0, 1), (2, (3, 4))).
TREE = ((0, 1), (2, (3, 4)))


class TreeComposer(nn.Module):
    def __init__(self, dim=6):
        super().__init__()
        self.compose = nn.Linear(2 * dim, dim)
        self.classify = nn.Linear(dim, 3)

    def encode(self, node, leaves):
        if isinstance(node, int):
            return leaves[:, node]
        left = self.encode(node[0], leaves)
        right = self.encode(node[1], leaves)
        return torch.tanh(self.compose(torch.cat([left, right], dim=-1)))

    def forward(self, leaves):
        root = self.encode(TREE, leaves)
        return self.classify(root)


def make_model():
    torch.manual_seed(0)
    return TreeComposer().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 5, 6, generator=g),)


EXPECTED_GRAPHS = 1
