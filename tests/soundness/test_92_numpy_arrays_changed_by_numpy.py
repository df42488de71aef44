"""Class 92: a numpy array from outside changed in place by numpy code (found 2026-12-07).

F352 (preprocessing probe): numpy is opaque to the monitor, so ``img -= MEAN;
img /= STD`` on an argument, ``np.add(hist, 1, out=hist)``, ``np.copyto(hist, ...)``,
``hist.ravel()[0] += 1`` or ``global hist; hist += ONES`` on a metrics array left
no store in the record.  The guard checks the contents the call found, so a call
finding them again (the same image, an accumulator reset between epochs) replayed
without the change: raw pixels returned, the histogram left at zero.  A run whose
outside array differs at its end from the contents it was met with is refused
now, unless a graph wrote the change (``torch.from_numpy(a).add_(x)``, class 58).
"""

from __future__ import annotations

from functools import partial

import numpy as np
import torch
from harness import Call, Case, backends, calls, execg, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="arrays92")

NORMALIZED_IN_PLACE = """
import numpy as np
import torch

MEAN = np.array([100.0, 110.0, 120.0], dtype=np.float32)
STD = np.array([50.0, 50.0, 50.0], dtype=np.float32)

def f(img):
    img -= MEAN
    img /= STD
    return torch.from_numpy(img).permute(2, 0, 1) * 2
"""


def _same_image(env):
    return (np.full((2, 2, 3), 100.0, dtype=np.float32),)


@backends()
def test_an_image_argument_normalized_in_place(backend):
    run_case(Case("normalized", prog(NORMALIZED_IN_PLACE), calls(4, _same_image)), backend)


ACCUMULATORS = {
    "add_out": "np.add(hist, 1, out=hist)",
    "copyto": "np.copyto(hist, hist + 1)",
    "ravel_view": "hist.ravel()[0] += 1",
    "augmented": "global hist\n    hist += ONES",
}


def _accumulator(kind: str) -> str:
    return (
        "import numpy as np\nimport torch\n\n"
        "hist = np.zeros(4)\nONES = np.ones(4)\n\n"
        f"def f(x):\n    {ACCUMULATORS[kind]}\n    return x * 2\n"
    )


@backends()
def test_a_metrics_array_reset_between_epochs(backend):
    for kind in sorted(ACCUMULATORS):
        vector = lambda env: (torch.randn(3),)
        script = [*calls(2, vector), execg("hist[:] = 0"), *calls(2, vector)]
        watch = lambda env: env.ns.hist
        run_case(Case(kind, prog(_accumulator(kind)), script, watch=watch), backend)


UPDATED_THROUGH_A_TENSOR = """
import numpy as np
import torch

TOTALS = np.zeros(3, dtype=np.float32)

def f(x):
    torch.from_numpy(TOTALS).add_(x)  # the graph writes the array's bytes
    return x * 2
"""


def test_an_array_a_graph_updates_still_replays():
    script = [Call(lambda env: (torch.ones(3),)), execg("TOTALS[:] = 0")] * 3
    watch = lambda env: env.ns.TOTALS
    run_case(
        Case("through_tensor", prog(UPDATED_THROUGH_A_TENSOR), script, min_hits=1, watch=watch)
    )
