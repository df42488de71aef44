"""MoCo's momentum encoder: an in-place EMA update of key-encoder parameters under no_grad, then query/key logits."""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F


class MoCo(nn.Module):
    def __init__(self, dim=6, m=0.9, T=0.2):
        super().__init__()
        self.m, self.T = m, T
        self.encoder_q = nn.Sequential(nn.Linear(10, 12), nn.ReLU(), nn.Linear(12, dim))
        self.encoder_k = copy.deepcopy(self.encoder_q)
        for param_k in self.encoder_k.parameters():
            param_k.requires_grad = False

    @torch.no_grad()
    def _momentum_update_key_encoder(self):
        for param_q, param_k in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
            param_k.data = param_k.data * self.m + param_q.data * (1.0 - self.m)

    def forward(self, im_q, im_k):
        q = F.normalize(self.encoder_q(im_q), dim=1)
        with torch.no_grad():
            self._momentum_update_key_encoder()
            k = F.normalize(self.encoder_k(im_k), dim=1)
        logits = torch.einsum("nc,mc->nm", [q, k]) / self.T
        labels = torch.arange(logits.shape[0])
        return F.cross_entropy(logits, labels), logits


def make_model():
    torch.manual_seed(0)
    model = MoCo()
    # Perturb the query encoder so that the EMA update visibly changes the key encoder.
    with torch.no_grad():
        for p in model.encoder_q.parameters():
            p.add_(0.5)
    return model.eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(4, 10, generator=g), torch.randn(4, 10, generator=g))


EXPECTED_GRAPHS = 1


def observe_state(model):
    """The key encoder after the EMA updates of every call."""
    return dict(model.encoder_k.state_dict())
