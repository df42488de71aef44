"""A module that counts its calls in a Python attribute (self.num_calls += 1) and stores the last batch size."""
import torch
import torch.nn as nn


class CountingNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 8)
        self.fc2 = nn.Linear(8, 2)
        self.num_calls = 0
        self.last_batch_size = None

    def forward(self, x):
        self.num_calls += 1
        self.last_batch_size = x.shape[0]
        return self.fc2(torch.relu(self.fc1(x)))


def make_model():
    torch.manual_seed(0)
    return CountingNet().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(3, 6, generator=g),)


EXPECTED_GRAPHS = 1
# The counter is external state read on every call, so each call sees a value
# its first record was not made for: without lifting every call is monitored
# (3); a runtime that lifts the counter into an input once it has changed
# needs 2.  Policy, so not asserted; the counter's value is (observe_state).
EXPECTED_MONITOR_RUNS = None


def observe_state(model):
    """External state the calls leave behind, compared with eager's after the calls."""
    return {"num_calls": model.num_calls, "last_batch_size": model.last_batch_size}
