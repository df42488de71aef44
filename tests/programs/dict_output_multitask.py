"""A multi-task model returning a dict of heads and losses, with heads kept in an nn.ModuleDict by task name."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiTask(nn.Module):
    def __init__(self, tasks=None):
        super().__init__()
        tasks = tasks or {"sentiment": 3, "topic": 5}
        self.shared = nn.Sequential(nn.Linear(12, 16), nn.ReLU())
        self.heads = nn.ModuleDict({name: nn.Linear(16, n) for name, n in tasks.items()})

    def forward(self, x, labels):
        h = self.shared(x)
        outputs = {}
        total = 0.0
        for name, head in self.heads.items():
            logits = head(h)
            outputs[f"{name}_logits"] = logits
            loss = F.cross_entropy(logits, labels[name])
            outputs[f"{name}_loss"] = loss
            total = total + loss
        outputs["loss"] = total
        return outputs


def make_model():
    torch.manual_seed(0)
    return MultiTask().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    labels = {
        "sentiment": torch.randint(0, 3, (4,), generator=g),
        "topic": torch.randint(0, 5, (4,), generator=g),
    }
    return (torch.randn(4, 12, generator=g), labels)


EXPECTED_GRAPHS = 1
