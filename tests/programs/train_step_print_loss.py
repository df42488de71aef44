"""A training-step function that prints the loss value with loss.item() just before returning it."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def make_model():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 10), nn.ReLU(), nn.Linear(10, 3)).eval()

    def train_step(x, y):
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        print(f"loss: {loss.item():.4f}")  # BREAK: FG202; DEFER: FG201
        return loss

    return train_step


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(4, 6, generator=g), torch.randint(0, 3, (4,), generator=g))


# Nothing but Python runs after the breaks, so there is one graph.
EXPECTED_GRAPHS = 1
EXPECTED_MONITOR_RUNS = None  # whether the printed value is guarded is runtime policy
