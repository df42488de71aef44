"""A RetinaNet-style focal loss module (one-hot targets, gather of p_t, alpha weighting) applied to logits."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class FocalLoss(nn.Module):
    def __init__(self, alpha=0.25, gamma=2.0, reduction="mean"):
        super().__init__()
        self.alpha = alpha
        self.gamma = gamma
        self.reduction = reduction

    def forward(self, inputs, targets):
        log_p = F.log_softmax(inputs, dim=-1)
        log_pt = log_p.gather(1, targets.view(-1, 1)).squeeze(1)
        pt = log_pt.exp()
        one_hot = F.one_hot(targets, num_classes=inputs.size(-1)).float()
        alpha_t = self.alpha * one_hot.sum(-1) + (1 - self.alpha) * (1 - one_hot.sum(-1))
        loss = -alpha_t * (1 - pt) ** self.gamma * log_pt
        if self.reduction == "mean":
            return loss.mean()
        elif self.reduction == "sum":
            return loss.sum()
        return loss


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 4)
        self.criterion = FocalLoss()

    def forward(self, x, y):
        logits = self.fc(x)
        return self.criterion(logits, y), logits


def make_model():
    torch.manual_seed(0)
    return Classifier().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(5, 6, generator=g), torch.randint(0, 4, (5,), generator=g))


EXPECTED_GRAPHS = 1
