"""TorchScript inside a compiled function runs eagerly, and the report says why.

A ``torch.jit.script`` module or function runs its ops in TorchScript's
interpreter, where torch's function modes (and so the monitor) never see them:
the function falls back with that reason, and every call gives eager's result.
"""

from __future__ import annotations

import torch

import fullgraph.runtime as fr


class WithScriptedLayer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scripted = torch.jit.script(torch.nn.Linear(3, 3))
        self.head = torch.nn.Linear(3, 1)

    def forward(self, x):
        return self.head(torch.relu(self.scripted(x)))


@torch.jit.script
def doubled_relu(x):
    return torch.relu(x) * 2


def calls_a_script_function(x):
    return doubled_relu(x) + 1


def test_a_scripted_submodule_runs_eagerly_with_its_reason():
    model = WithScriptedLayer()
    compiled = fr.compile(model, backend="eager")
    for _ in range(3):
        x = torch.randn(2, 3)
        assert torch.equal(compiled(x), model(x))
    assert "torch.jit.script" in compiled.stats.fallback_reason
    assert compiled.stats.hits == 0


def test_a_script_function_runs_eagerly_with_its_reason():
    compiled = fr.compile(calls_a_script_function, backend="eager")
    for _ in range(3):
        x = torch.randn(3)
        assert torch.equal(compiled(x), calls_a_script_function(x))
    assert "ScriptFunction (torch.jit.script)" in compiled.stats.fallback_reason
