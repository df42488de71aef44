"""Kipf & Welling GCN on a dense adjacency: add self-loops, symmetric D^-1/2 A D^-1/2 normalisation, two layers."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class GraphConvolution(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(in_features, out_features))
        self.bias = nn.Parameter(torch.zeros(out_features))
        nn.init.xavier_uniform_(self.weight)

    def forward(self, input, adj):
        support = torch.mm(input, self.weight)
        return torch.mm(adj, support) + self.bias


class GCN(nn.Module):
    def __init__(self, nfeat=6, nhid=8, nclass=3, dropout=0.5):
        super().__init__()
        self.gc1 = GraphConvolution(nfeat, nhid)
        self.gc2 = GraphConvolution(nhid, nclass)
        self.dropout = dropout

    @staticmethod
    def normalize(adj):
        adj = adj + torch.eye(adj.size(0))
        deg = adj.sum(1)
        d_inv_sqrt = deg.pow(-0.5)
        d_inv_sqrt = torch.where(torch.isinf(d_inv_sqrt), torch.zeros_like(d_inv_sqrt), d_inv_sqrt)
        return d_inv_sqrt.unsqueeze(1) * adj * d_inv_sqrt.unsqueeze(0)

    def forward(self, x, adj):
        adj = self.normalize(adj)
        x = F.relu(self.gc1(x, adj))
        x = F.dropout(x, self.dropout, training=self.training)
        x = self.gc2(x, adj)
        return F.log_softmax(x, dim=1)


def make_model():
    torch.manual_seed(0)
    return GCN().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(7, 6, generator=g)
    a = (torch.rand(7, 7, generator=g) > 0.6).float()
    return (x, ((a + a.t()) > 0).float())


EXPECTED_GRAPHS = 1
