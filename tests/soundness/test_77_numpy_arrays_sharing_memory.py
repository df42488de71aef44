"""Class 77: numpy arrays that share a tensor's memory.

``h.numpy()`` (and ``np.asarray(h)``) is a view of ``h``'s memory: an in-place
update of ``h`` after it (``LOG.append(h.detach().numpy()); h.relu_()``) shows
through the array, and so does an update the caller makes to ``h`` when the
function returns both.  The read is a value read made in front of the graph, and
the record recomputed ``h`` for it in a small check graph (data_checks): the
array was a view of that copy, so replays handed out arrays that missed the
updates (left open by the sixteenth session's tensor-API probe).  Such a read
now stays in place (the graph splits), so the array views the tensor the program
goes on using.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
import torch
from harness import Call, Case, backends, execg, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="arrays77")

PROGRAMS = {
    # A training loop's activation log, then the activation applied in place.
    "logged_then_updated": """
def f(x):
    h = x * 2
    LOG.append(h.detach().numpy())
    h.relu_()
    return h + 1
""",
    "slice_logged_then_clamped": """
def f(x):
    h = x * 2
    LOG.append(h[1:].numpy())
    h.clamp_(min=0)
    return h.sum()
""",
    "asarray_then_updated": """
def f(x):
    h = x * 2
    a = np.asarray(h)
    h.relu_()
    LOG.append(a)
    return h.sum()
""",
}


def _logged(env):
    return [np.array(a).tolist() for a in env.ns.LOG]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@backends(inductor=True)
def test_an_array_logged_before_its_tensor_is_updated(name, backend):
    source = "import numpy as np\nimport torch\n\nLOG = []\n" + PROGRAMS[name]
    script = []
    for _ in range(4):
        script += [execg("LOG.clear()"), Call(lambda env: (torch.randn(5),))]
    case = Case(name, prog(source), script, watch=_logged, min_hits=2)
    run_case(case, backend)


BOTH_RETURNED = """
import torch

def f(x):
    y = x + 1
    return y.numpy(), y
"""


def _update_returned_tensor(env, result):
    result[1].add_(100)  # the caller's update shows through the array in eager


def test_an_array_returned_with_its_tensor_shares_its_memory():
    script = [Call(lambda env: (torch.randn(3),), then=_update_returned_tensor) for _ in range(4)]
    run_case(Case("both_returned", prog(BOTH_RETURNED), script, min_hits=2), "eager")


ACCUMULATED_THROUGH_A_TENSOR = """
import numpy as np
import torch

TOTALS = np.zeros(4, dtype=np.float32)

def f(x):
    torch.from_numpy(TOTALS).add_(x)
    return x * float(TOTALS.sum())
"""


def test_an_array_the_function_updates_through_a_tensor_is_guarded_as_it_was_met():
    # The guard compared the array with its contents after the call: the next call,
    # which starts from those, replayed the sum the record read ([4.] where eager
    # gives [8.]).
    script = [Call(lambda env: (torch.ones(4),)) for _ in range(4)]
    watch = lambda env: env.ns.TOTALS  # noqa: E731
    run_case(Case("accumulated", prog(ACCUMULATED_THROUGH_A_TENSOR), script, watch=watch), "eager")
