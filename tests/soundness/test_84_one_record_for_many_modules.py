"""Class 84: one compiled function called with many modules of one class.

``Block.forward`` compiled once (``@fullgraph.runtime.compile`` on the method)
and run by every block of a model, or ``step(block, x)`` called with each block:
the module passed in was checked by its class, but its submodules by identity,
so each block needed a record of its own and the ninth ran eagerly (the
recompile limit; left open by the sixteenth session).  A submodule reached from
an argument is checked by its class now (F334): what a record reads of it is
read again through its path, so the blocks below (other weights, another scale,
another activation, a hook, a shared submodule, eval mode) must each get their
own answer, while blocks that differ only in their weights share one record.
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Call, Case, backends, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="modules84")

BLOCKS = """
import torch

class Block(torch.nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.act = torch.nn.ReLU()
        self.scale = scale

    def forward(self, x):
        return self.act(self.lin(x)) * self.scale + self.lin(x)

blocks = [Block(1.0) for _ in range(12)]
blocks[3].scale = 3.0
blocks[4].act = torch.nn.Tanh()  # another kind of layer in the same slot
blocks[5].lin.register_forward_hook(lambda module, args, out: out * 10)
blocks[6].lin = blocks[7].lin  # two blocks share a layer
blocks[8].eval()
blocks[9].act = torch.nn.LeakyReLU(0.3)
blocks[10].act = torch.nn.LeakyReLU(0.1)

def f(block, x):
    return block(x)
"""


@backends(inductor=True)
def test_blocks_of_one_class_share_records_and_keep_their_differences(backend):
    order = [*range(12), *range(12), 0, 1, 2]
    script = [
        Call(lambda env, i=i: (env.ns.blocks[i], torch.randn(2, 4)), label=f"block {i}")
        for i in order
    ]
    watch = lambda env: [b.lin.weight for b in env.ns.blocks]
    result = run_case(Case("blocks", prog(BLOCKS), script, watch=watch, min_hits=12), backend)
    assert result.records <= 8  # a record per kind of block, not per block
