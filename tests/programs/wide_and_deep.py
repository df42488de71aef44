"""A Wide & Deep recommender: categorical embeddings and dense features in the deep part, a wide linear part."""
import torch
import torch.nn as nn


class WideDeep(nn.Module):
    def __init__(self, cardinalities=(10, 7, 5), emb_dim=4, n_dense=3, hidden=(16, 8)):
        super().__init__()
        self.embeddings = nn.ModuleList([nn.Embedding(c, emb_dim) for c in cardinalities])
        self.wide = nn.Linear(sum(cardinalities), 1)
        layers, d = [], emb_dim * len(cardinalities) + n_dense
        for h in hidden:
            layers += [nn.Linear(d, h), nn.BatchNorm1d(h), nn.ReLU()]
            d = h
        self.deep = nn.Sequential(*layers, nn.Linear(d, 1))
        self.register_buffer("offsets", torch.tensor([0, *torch.tensor(cardinalities).cumsum(0)[:-1].tolist()]))
        self.n_wide = sum(cardinalities)

    def forward(self, cat_feats, dense_feats):
        embs = [emb(cat_feats[:, i]) for i, emb in enumerate(self.embeddings)]
        deep_in = torch.cat(embs + [dense_feats], dim=1)
        one_hot = torch.zeros(cat_feats.size(0), self.n_wide).scatter_(1, cat_feats + self.offsets, 1.0)
        logit = self.wide(one_hot) + self.deep(deep_in)
        return torch.sigmoid(logit).squeeze(1)


def make_model():
    torch.manual_seed(0)
    return WideDeep().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    cats = torch.stack([torch.randint(0, c, (4,), generator=g) for c in (10, 7, 5)], dim=1)
    return (cats, torch.randn(4, 3, generator=g))


EXPECTED_GRAPHS = 1
