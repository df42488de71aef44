"""Class 27: containers read by library code the monitor does not step into.

``L.copy()[0]``, ``copy.deepcopy(cfg)``, ``statistics.mean(xs)``,
``",".join(names)``, ``vars(args)["lr"]``, ``itertools.chain(xs)``,
``collections.deque(xs)``: C methods and standard-library code read a
container (or an object's ``__dict__``) from outside, unobserved.  Each
program is called, the container is changed between calls (an item set, an
item appended, an attribute set), and called again: the replay must see the
change (a miss and a new record), and the unchanged calls must replay.
"""

from __future__ import annotations

from functools import partial

import pytest
import torch
from harness import Case, backends, calls, execg, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="reads27")

HEADER = """
import argparse, array, collections, copy, heapq, itertools, operator, re, statistics
import types
import numpy as np
import torch

L = [1.0, 2.0]
D = {"a": 1.0, "b": 2.0}
S = ["x", "y"]
NESTED = {"lr": [0.1, 0.2]}
ARGS = argparse.Namespace(lr=1.0, wd=0.5)
P = collections.namedtuple("P", "lr wd")
POINTS = [P(1.0, 0.5)]

class Config:
    def __init__(self):
        self.scale = 1.0
        self.shift = 0.5

CFG = Config()
"""

CHANGE = (
    "L[0] = 5.0; L.append(3.0); D['a'] = 4.0; S.append('zz'); NESTED['lr'][0] = 2.5; "
    "ARGS.lr = 4.0; POINTS[0] = P(3.0, 1.5); CFG.scale = 3.0"
)

PROGRAMS = {
    "list_copy": "x * L.copy()[0]",
    "dict_copy": "x * D.copy()['a']",
    "copy_copy": "x * copy.copy(L)[0]",
    "deepcopy_nested": "x * copy.deepcopy(NESTED)['lr'][0]",
    "join": "x * len(','.join(S))",
    "statistics_mean": "x * statistics.mean(L)",
    "numpy_mean": "x * float(np.mean(L))",
    "itemgetter": "x * operator.itemgetter(0)(L)",
    "chain": "x * list(itertools.chain(L))[-1]",
    "deque": "x * collections.deque(L)[-1]",
    "accumulate": "x * list(itertools.accumulate(L))[-1]",
    "heapq_nlargest": "x * heapq.nlargest(1, L)[0]",
    "ordered_dict": "x * collections.OrderedDict(D)['a']",
    "array": "x * array.array('d', L)[-1]",
    "findall_of_join": "x * len(re.findall('[a-z]+', ' '.join(S)))",
    "vars_namespace": "x * vars(ARGS)['lr'] + vars(ARGS)['wd']",
    "vars_object_items": "x * sum(v for _, v in vars(CFG).items())",
    "namedtuple_asdict": "x * POINTS[0]._asdict()['lr']",
}


@backends()
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_container_read_by_library_code_is_guarded(backend, name):
    source = HEADER + f"\ndef f(x):\n    return {PROGRAMS[name]}\n"
    run_case(
        Case(
            f"library_read_{name}",
            prog(source, "f"),
            [
                *calls(3, lambda env: (torch.ones(2),)),
                execg(CHANGE),
                *calls(3, lambda env: (torch.ones(2),)),
            ],
            min_hits=3,
        ),
        backend,
    )


# ---------------------------------------------------------------------------
# numpy arrays read by numpy code and operators the monitor does not see into: an
# array from outside changed in place is the same object with other contents, and
# an array argument is another array each call (found by a probe: both replayed stale).

NUMPY_ARRAYS = """
import numpy as np
import torch

TABLE = np.array([1.0, 2.0])

def f(x, weights):
    return x * float(TABLE.sum()) + float(np.mean(TABLE)) + float(TABLE @ TABLE) * float(weights.max())
"""


@backends()
def test_numpy_arrays_changed_in_place_or_passed_anew(backend):
    import numpy as np

    run_case(
        Case(
            "numpy_arrays_changed_in_place_or_passed_anew",
            prog(NUMPY_ARRAYS),
            [
                *calls(2, lambda env: (torch.ones(2), np.array([1.0, 3.0]))),
                execg("TABLE[0] = 9.0"),
                *calls(2, lambda env: (torch.ones(2), np.array([1.0, 3.0]))),
                *calls(1, lambda env: (torch.ones(2), np.array([5.0, 3.0]))),
            ],
            min_hits=2,
        ),
        backend,
    )
