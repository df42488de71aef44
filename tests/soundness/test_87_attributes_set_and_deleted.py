"""Class 87: an attribute the call sets and deletes again (found 2026-12-07).

F345 (object-model probe): ``self._stash = x * 2; ...; del self._stash`` in a
forward that also counts its calls (``self.n += 1``).  The mock replayed the
deletion as ``delattr(M, "_stash")``, which raised (the attribute is not there
before the call); the call then ran again under the monitor, counting a second
time.  The deletion now removes the attribute where it is there, and a bare
``del h.tmp`` of an attribute the call did not set guards that it is there (eager
raises ``AttributeError`` where it is not).
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Call, Case, backends, calls, execg, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="attributes87")

STASHED_THEN_DELETED = """
import torch

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.n = 0
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        self.n += 1
        self._stash = self.lin(x)
        y = self._stash + 1
        del self._stash
        return y, self.n

net = Net()
"""


@backends()
def test_an_attribute_set_and_deleted_in_the_forward(backend):
    watch = lambda env: (env.ns.net.n, hasattr(env.ns.net, "_stash"))
    case = Case(
        "stashed",
        prog(STASHED_THEN_DELETED, target="net"),
        calls(5, _vector),
        min_hits=3,
        watch=watch,
    )
    run_case(case, backend)


def _vector(env):
    return (torch.randn(3),)


DELETED_ONLY = """
import torch

class Holder:
    pass

holder = Holder()
holder.tmp = 1

def f(x):
    del holder.tmp
    return x * 2
"""


@backends()
def test_a_deletion_of_an_attribute_the_caller_set(backend):
    reset = execg("holder.tmp = 1")
    script = [Call(_vector), reset, Call(_vector), reset, Call(_vector), Call(_vector)]
    watch = lambda env: hasattr(env.ns.holder, "tmp")
    run_case(Case("deleted_only", prog(DELETED_ONLY), script, min_hits=1, watch=watch), backend)
