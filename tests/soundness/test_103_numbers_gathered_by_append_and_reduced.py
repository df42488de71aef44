"""Class 103: numbers gathered with ``append`` and reduced (found 2026-12-07).

F378 (evaluation-loop probe of the nineteenth session; cost): per-class metrics
gathered as ``per.append(acc_c.item())`` and reduced with ``sum(per) / len(per)``,
``max(per)``, ``min(per)``: each number was pinned (``per.append`` and ``len(per)``
counted as reads of the list's items, and ``sum`` / ``min`` / ``max`` took them by
value), a record per call.  A list the call made remembers the symbols appended to
it, and a reduction of a list of numbers of one type is an expression.  What still
reads the numbers where no symbol follows them (``sorted(per)``, ``print(per)``, a
bound ``per.copy``) pins them, as before; the adversarial cases below check that.
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Case, backends, calls, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="gathered103")


def _batch(env):
    return (torch.randn(8, 3), torch.randint(0, 3, (8,)))


PER_CLASS = """
import torch

def f(logits, y):
    per = []
    for c in range(3):
        hit = (logits.argmax(1)[y == c] == c).float()
        per.append(hit.mean().nan_to_num().item())
    macro = sum(per) / len(per)
    return macro, min(per), max(per), per[0], [round(v, 3) for v in per]
"""


@backends()
def test_per_class_numbers_reduced(backend):
    run_case(Case("per_class", prog(PER_CLASS), calls(5, _batch), min_hits=3), backend)


READ_UNFOLLOWED = """
import json
import torch

LOG = []

def f(x):
    per = []
    add = per.append
    for i in range(3):
        add(x[i].item())
    ordered = sorted(per)
    copy = per.copy
    text = json.dumps(per)
    mixed = [1, x[0].item()]
    print(per, text)
    LOG.append(max(mixed))
    return ordered[0], sum(copy()), len(per)
"""


@backends()
def test_gathered_numbers_read_where_no_symbol_follows(backend):
    watch = lambda env: list(env.ns.LOG)
    case = Case(
        "unfollowed", prog(READ_UNFOLLOWED), calls(4, lambda env: (torch.randn(3),)), watch=watch
    )
    run_case(case, backend)
