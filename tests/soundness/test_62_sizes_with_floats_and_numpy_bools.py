"""Class 62: sizes C code compares with floats, and numpy bools torch reads as floats.

Found by the fifteenth session's probe of what callers pass (F273, F274):

- A record that follows sizes replayed the first call's answer of ``max(n, 6.5)``,
  ``min(n - 5, False)``, ``sum(x.shape, 0.5)`` and ``n in [4.0, 6.0]``: C compares
  or adds the size with a float or a bool natively, and no size fact was kept.
- A varying ``np.bool_`` argument was lifted as a Python bool, but torch reads it
  as a float (``x * np.True_`` is a float tensor for an int ``x``).
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
import torch
from harness import Call, Case, backends, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="sizes62")

SIZES_WITH_FLOATS = """
import torch

def f(x):
    n = x.shape[0]
    return (
        x * max(n, 6.5),
        x * min(n, 6.5),
        x * max(n - 7, 0.0),
        x * max([n, 6.5]),
        x * (n in [4.0, 6.0, 8.0]),
        x * sum(x.shape, 0.5),
        x * min(n - 5, False),
        x * max(len(x), 6.5),
        x * max(n // 2, x.shape[1] * 1.5),
    )
"""


@backends()
def test_sizes_compared_with_floats_in_c_code(backend):
    script = [Call(lambda env, n=n: (torch.ones(n, 2),)) for n in (4, 6, 8, 10, 3, 5, 8, 10)]
    run_case(Case("sizes_with_floats", prog(SIZES_WITH_FLOATS), script, min_hits=2), backend)


NUMPY_BOOL = """
import torch

def f(x, flag):
    return x * flag, torch.full((2,), flag), torch.where(x > 0, x, flag), flag + x
"""


@backends()
@pytest.mark.parametrize("dtype", [torch.int64, torch.float16, torch.bool])
def test_numpy_bools_as_torch_reads_them(backend, dtype):
    flags = (np.True_, np.False_, np.True_, np.False_, np.True_)
    script = [Call(lambda env, b=b: (torch.arange(3).to(dtype), b)) for b in flags]
    run_case(Case(f"numpy_bool_{dtype}", prog(NUMPY_BOOL), script, min_hits=2), backend)
