"""Class 66: torch calls that raise for some values, caught by the program.

Found by the fifteenth session's probe of exceptions and control flow (F283):
``try: x[idx] except IndexError: ...`` recorded with an index out of range
replayed the ``except`` path for indices in range (also ``scatter``, ``gather``,
``cholesky``, ``int()`` of a NaN, an in-place op on a leaf that requires grad).
Whether a torch call raises can depend on values no guard checks: the call is
made again by the mock and checked to raise the same; an in-place call refuses.
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Call, Case, backends, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="caught66")

CAUGHT = """
import torch

def index(x, idx):
    try:
        return x[idx] * 2
    except IndexError:
        return "caught"

def factor(a):
    try:
        return torch.linalg.cholesky(a)
    except RuntimeError as error:
        return "not positive definite" in str(error)

def scale_in_place(x):
    try:
        x.mul_(2)
        return "in place"
    except RuntimeError:
        return "copy", x * 2
"""


def indices(*rows):
    return [Call(lambda env, r=r: (torch.arange(4.0), torch.tensor(r))) for r in rows]


@backends()
def test_an_index_out_of_range_caught(backend):
    script = indices([0, 7], [0, 7], [0, 3], [0, 9], [1, 2], [0, 7])
    run_case(Case("index_caught", prog(CAUGHT, "index"), script, min_hits=2), backend)


@backends()
def test_a_factorization_that_fails_for_some_matrices(backend):
    eye = torch.eye(2)
    script = [Call(lambda env, m=m: (m.clone(),)) for m in (-eye, -eye, eye, -eye, eye * 2)]
    run_case(Case("cholesky_caught", prog(CAUGHT, "factor"), script, min_hits=1), backend)


@backends()
def test_an_in_place_op_refused_on_a_leaf(backend):
    leaf = Call(lambda env: (torch.ones(2, requires_grad=True),))
    other = Call(lambda env: (torch.ones(2, requires_grad=True) * 1,))
    script = [leaf, leaf, other, leaf, other]
    run_case(Case("in_place_caught", prog(CAUGHT, "scale_in_place"), script), backend)


def test_a_replay_that_raised_leaves_no_context_on_the_programs_exception():
    """A replay that raised runs the program again (it raises at its own line): outside
    fullgraph's ``except`` block, so the exception has no ``__context__`` eager's lacks."""
    import fullgraph.runtime as fr

    def take(x, idx):
        return x[idx] * 2

    compiled = fr.compile(take, backend="eager", eager_check=False)
    compiled(torch.arange(4.0), torch.tensor([1]))
    compiled(torch.arange(4.0), torch.tensor([2]))
    try:
        compiled(torch.arange(4.0), torch.tensor([9]))
    except IndexError as error:
        assert error.__context__ is None
    else:
        raise AssertionError("an index out of range must raise")
    assert compiled.stats.rerun_after_error == 1


IN_PLACE = """
import torch

def scale(x):
    x.mul_(2)
    return x.sum()
"""


@backends()
def test_an_in_place_update_of_a_leaf_that_requires_grad(backend):
    """F287: recorded with a non-leaf, replayed for a parameter-like leaf: eager raises."""
    other = Call(lambda env: (torch.ones(2, requires_grad=True) * 1,))
    leaf = Call(lambda env: (torch.ones(2, requires_grad=True),))
    script = [other, other, leaf, other, leaf]
    run_case(Case("in_place_on_a_leaf", prog(IN_PLACE, "scale"), script, min_hits=2), backend)
