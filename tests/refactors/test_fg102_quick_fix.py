"""A single FG102 quick fix (what an editor applies) removes its own finding."""

from __future__ import annotations

from fullgraph.refactors import apply_edits, lint_source

SOURCE = """import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        print("shape", y.shape)
        return y
"""


def test_applying_only_the_fg102_fix_defers_the_call_and_clears_the_finding():
    (finding,) = [f for f in lint_source(SOURCE, "net.py") if f.code == "FG102"]
    fixed = apply_edits(SOURCE, finding.fix.edits)
    assert 'deferred(print, "shape", y.shape)' in fixed
    assert "    @defer_side_effects\n    def forward" in fixed
    assert "FG102" not in {f.code for f in lint_source(fixed, "net.py")}
