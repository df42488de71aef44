"""A training-loop guard: raise when the logits contain NaN or Inf (if not torch.isfinite(x).all(): raise)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))

    def forward(self, x, y):
        logits = self.body(x)
        if not torch.isfinite(logits).all():  # BREAK: FG202
            raise FloatingPointError("non-finite logits")
        return F.cross_entropy(logits, y)


def make_model():
    torch.manual_seed(0)
    return Model().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(4, 6, generator=g), torch.randint(0, 3, (4,), generator=g))


EXPECTED_GRAPHS = 2
