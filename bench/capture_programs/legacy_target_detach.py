"""DQN / BYOL-style target networks in old code: the target's output is detached and has
``requires_grad = False`` set on it, wrapped in ``Variable``; a training step."""

import torch
from torch import nn
from torch.autograd import Variable


class OnlineTarget(nn.Module):
    def __init__(self):
        super().__init__()
        self.online = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 3))
        self.target = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 3))

    def forward(self, state, reward):
        q = self.online(state)
        next_q = self.target(state).detach()
        next_q.requires_grad = False
        td_target = Variable(reward + 0.9 * next_q.max(dim=1).values)
        return nn.functional.smooth_l1_loss(q.max(dim=1).values, td_target)


def make_model():
    torch.manual_seed(0)
    return OnlineTarget().train()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(4, 5, generator=g), torch.randn(4, generator=g)


EXPECTED_GRAPHS = 1
GRADIENTS = True
