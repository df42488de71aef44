"""Class 97: numbers read back out of a container the run built (found 2026-12-07).

F361 (cost, from the eighteenth session's preprocessing probe): ``vals =
[a.item(), b.item()]`` then ``vals[0]``, ``logs["ce"]``, ``for v in vals`` or ``[2 *
v for v in vals]``: the read took the number by value, so a training step that
gathers its losses and reads them back was a record per call.  The item keeps its
symbol now (``monitor/container_items.py``).  The symbol is taken only while the
container still holds the very number it stands for: a list a callout reordered
(``vals.sort()``, ``vals.reverse()``), an item replaced, or a read by a slice take the numbers by
value, as before.
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Call, Case, backends, calls, execg, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="items97")


def _vector(env):
    return (torch.randn(4),)


READ_BACK = """
import torch

LOG = []

def f(x):
    vals = [x.sum().item(), x.mean().item(), x.max().item()]
    logs = {"sum": vals[0], "mean": x.mean().item()}
    total = 0.0
    for v in vals:
        total += v
    doubled = [2 * v for v in vals]
    LOG.append((logs["sum"], vals[-1]))
    pair = (vals[1], x.min().item())
    return x * total + doubled[1], logs["mean"] + pair[1]
"""


@backends(inductor=True)
def test_items_read_back_by_index_key_and_iteration(backend):
    watch = lambda env: list(env.ns.LOG)
    case = Case("read_back", prog(READ_BACK), calls(5, _vector), min_hits=3, watch=watch)
    run_case(case, backend)


REORDERED = """
import torch

def f(x):
    vals = [x.sum().item(), x.mean().item(), x.max().item()]
    vals.sort()
    first = vals[0]
    ranked = [x.min().item(), x.std().item()]
    ranked.reverse()
    out = []
    for v in ranked:
        out.append(v)
    return x * first, out
"""


@backends()
def test_a_list_sorted_or_reversed_in_place(backend):
    # The same two inputs again and again: the numbers are pinned by the reordering,
    # so only a call with the first call's numbers replays (and must sort the same).
    script = [Call(_fixed(i % 2)) for i in range(6)]
    run_case(Case("reordered", prog(REORDERED), script, min_hits=3), backend)


def _fixed(which):
    return lambda env: (torch.tensor([3.0, -1.0, 2.0, 0.5]) * (1 + which),)


REPLACED = """
import torch

STATE = {"step": 0}

def f(x):
    vals = [x.sum().item(), x.mean().item()]
    if STATE["step"] % 2:
        vals[0] = 1.5
    vals.append(x.max().item())
    vals.insert(0, 0.25)
    total = sum(vals[:2])
    for i, v in enumerate(vals):
        total += i * v
    return x * total, vals[1], vals[-1]
"""


@backends()
def test_items_replaced_moved_or_sliced(backend):
    script = [
        Call(_vector),
        Call(_vector),
        execg("STATE['step'] = 1"),
        Call(_vector),
        Call(_vector),
        execg("STATE['step'] = 2"),
        Call(_vector),
    ]
    run_case(Case("replaced", prog(REPLACED), script, watch=lambda env: None), backend)


PERCENT_FORMAT = """
import torch

LOG = []

def f(x, epoch):
    loss = x.sum().item()
    print("loss %.4f" % loss)
    print("epoch %d loss %.3f (%s)" % (epoch, loss, "train"))
    LOG.append("%d:%.2f" % (epoch, x.mean().item()))
    return x * 2
"""


@backends()
def test_printf_style_formatting_of_numbers_that_vary(backend):
    """F370: ``"loss %.4f" % loss.item()`` pinned the number (f-strings did not)."""
    script = [Call(lambda env, i=i: (torch.randn(3), i)) for i in range(6)]
    watch = lambda env: list(env.ns.LOG)
    run_case(Case("percent", prog(PERCENT_FORMAT), script, min_hits=3, watch=watch), backend)
