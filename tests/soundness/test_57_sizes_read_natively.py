"""Class 57: followed sizes whose number Python reads without asking the size.

Once an argument's size varies, sizes are followed as symbols: an ``int``
subclass whose own methods build expressions and record comparisons.  An
operator whose left operand is not an int (``0.5 * n``, ``20.0 < n``,
``True + n``, ``Mode.WIDE * n``) runs the left operand's method, which reads
the number natively; so do ``torch.sym_max`` and its kin.  Nothing pinned the
size, and the record replayed the first number for other sizes (F255, found by
the fourteenth session's probe of size-following).  Also here: a size stored
as a dict key was moved to the end of the dict when the run made it a plain int
again, and one stored in a set an attribute holds stayed an int subclass (F256).
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Call, Case, backends, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="sizes57")

LENGTHS = (16, 16, 24, 17, 8, 33, 16)


def of_length(n):
    return lambda env: (torch.randn(2, n),)


SCRIPT = [Call(of_length(n)) for n in LENGTHS]

NATIVE_READS = {
    "float_on_the_left": """
def f(x):
    n = int(0.5 * x.shape[1])
    return x[:, :n].sum(1), n
""",
    "reciprocal": """
def f(x):
    return x.sum(1) * (1.0 / x.shape[1])
""",
    "float_compared": """
def f(x):
    if 20.0 < x.shape[1]:
        return x * 2
    return x - 1
""",
    "bool_operands": """
USE_CLS = True

def f(x):
    n = x.shape[1] + USE_CLS
    odd = x.shape[1] % 2 == True  # noqa: E712 - the program's own comparison
    return x.new_zeros(n), odd, True + x.shape[1]
""",
    "int_enum": """
import enum

class Win(enum.IntEnum):
    SMALL = 8
    BIG = 20

def f(x):
    n = Win.SMALL * x.shape[1]
    wide = x.shape[1] > Win.BIG
    return x.new_zeros(n), n, wide
""",
    "sym_max": """
import torch

def f(x):
    n = torch.sym_max(x.shape[1], 20)
    return x.new_zeros(n), n, torch.sym_min(x.shape[1], 20)
""",
}


@backends()
def test_a_size_python_reads_natively_is_pinned(backend):
    for name, source in NATIVE_READS.items():
        source = "import torch\n" + source
        run_case(Case(f"native_{name}", prog(source), SCRIPT), backend)


STORED = """
import torch

class Log(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.d = {}
        self.lens = set()

    def forward(self, x):
        self.d[x.shape[1]] = "size"
        self.d[f"n{len(self.d)}"] = "tag"
        self.lens = {x.shape[1]}
        return x * 2, [type(n).__name__ for n in self.lens]

model = Log()
"""


def stored_state(env):
    model = env.ns.model
    return {
        "keys": list(model.d),
        "key_types": [type(k).__name__ for k in model.d],
        "lens": [type(n).__name__ for n in model.lens],
    }


@backends()
def test_sizes_stored_as_keys_keep_their_place_and_type(backend):
    case = Case("stored_sizes", prog(STORED, "model"), SCRIPT, watch=stored_state)
    run_case(case, backend)
