"""A LoRA adapter wrapping a frozen nn.Linear: base output plus scaled low-rank update, merged flag read in forward."""
import math

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, base: nn.Linear, r=2, alpha=4):
        super().__init__()
        self.base = base
        for p in self.base.parameters():
            p.requires_grad_(False)
        self.lora_A = nn.Parameter(torch.empty(r, base.in_features))
        self.lora_B = nn.Parameter(torch.randn(base.out_features, r) * 0.1)
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        self.scaling = alpha / r
        self.merged = False

    def forward(self, x):
        result = self.base(x)
        if not self.merged:
            result = result + (x @ self.lora_A.t() @ self.lora_B.t()) * self.scaling
        return result


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = LoRALinear(nn.Linear(8, 8))
        self.v = LoRALinear(nn.Linear(8, 8))

    def forward(self, x):
        return torch.softmax(self.q(x) @ x.transpose(-1, -2), dim=-1) @ self.v(x)


def make_model():
    torch.manual_seed(0)
    return Model().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 4, 8, generator=g),)


EXPECTED_GRAPHS = 1
