"""The work of a whole-file lint and fix grows linearly with the file (issue 18).

Not timed (a shared machine makes timings flaky): the nodes walked, by libcst
(``CSTNode.visit``) and by the rules' own walks (``fast_tree.children``), are
counted for a file and for the same file twice as long.  A step that walks the
module once per class or per finding (how ``fullgraph fix`` on a 19,667-line
file took over 7 minutes) makes the count grow with the square.
"""

from __future__ import annotations

import libcst as cst
import pytest

from fullgraph.refactors import fast_tree, fix_source, lint_source
from fullgraph.refactors.incremental import linter as incremental

HEADER = "import torch\nfrom torch import nn\n"
BLOCK = '''

class Block{index}(nn.Module):
    """Block {index}."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        print("block {index}", x.shape)
        h = self.lin(x)
        if h.sum() > 0:
            h = h * 2
        else:
            h = h - 1
        assert (h > -100).all(), "range"
        scale = h.mean().item()
        return h * scale


class Sub{index}(Block{index}):
    pass
'''


def _source(blocks: int) -> str:
    return HEADER + "".join(BLOCK.format(index=i) for i in range(blocks))


def _work(monkeypatch, action, source) -> int:
    count = 0
    visit, children = cst.CSTNode.visit, fast_tree.children

    def counted_visit(self, visitor):
        nonlocal count
        count += 1
        return visit(self, visitor)

    def counted_children(node):
        nonlocal count
        count += 1
        return children(node)

    with monkeypatch.context() as patch:
        # Chunk results are shared in the process: start from none, as a new `fullgraph fix`.
        patch.setattr(incremental, "_SHARED", incremental._SharedResults(capacity=4000))
        patch.setattr(cst.CSTNode, "visit", counted_visit)
        patch.setattr(fast_tree, "children", counted_children)
        action(source)
    return count


@pytest.mark.parametrize("action", [lint_source, fix_source], ids=["check", "fix"])
def test_work_grows_linearly_with_the_file(monkeypatch, action):
    small, large = _source(12), _source(24)
    findings = len(lint_source(small))
    assert findings >= 12 * 4  # every block has its breaks: the per-finding work is counted
    ratio = _work(monkeypatch, action, large) / _work(monkeypatch, action, small)
    assert ratio < 2.15, f"twice the file cost {ratio:.2f} times the work"


def test_fix_of_a_long_file_is_complete_and_idempotent():
    fixed = fix_source(_source(24))
    assert fixed.count("torch.where(") == 24
    assert fix_source(fixed) == fixed
