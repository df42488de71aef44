"""A prototypical network (few-shot): class prototypes from boolean-masked support embeddings in a comprehension."""
import torch
import torch.nn as nn


class ProtoNet(nn.Module):
    def __init__(self, n_way=3):
        super().__init__()
        self.n_way = n_way
        self.encoder = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 8))

    def forward(self, support, support_y, query):
        z_support = self.encoder(support)
        z_query = self.encoder(query)
        prototypes = torch.stack(
            [z_support[support_y == c].mean(dim=0) for c in range(self.n_way)]  # GRAPH: FG203
        )
        dists = torch.cdist(z_query, prototypes)
        return (-dists).log_softmax(dim=-1)


def make_model():
    torch.manual_seed(0)
    return ProtoNet().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    support_y = torch.arange(3).repeat_interleave(2)  # 3-way 2-shot episodes: fixed label layout
    return (torch.randn(6, 10, generator=g), support_y, torch.randn(4, 10, generator=g))


# One mask per class: the graph is split three times.
EXPECTED_GRAPHS = 1
