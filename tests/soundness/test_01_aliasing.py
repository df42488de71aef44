"""Class 1: aliasing and identity.

The same tensor in two argument positions, ``x is y`` between arguments,
overlapping views of one storage (a view of an argument passed beside it, an
argument that is a view of a buffer or parameter), in-place updates on
overlapping memory.  A record built for distinct tensors must not replay for
aliased ones, nor the reverse.
"""

from __future__ import annotations

import torch
from harness import Call, Case, Env, backends, calls, load_program, run_case


def two(env):
    return torch.randn(4), torch.randn(4)


def same(env):
    t = torch.randn(4)
    return t, t


# --- the same tensor passed twice, with an in-place update -------------------


def build_accumulate():
    def accumulate(total, update):
        total.add_(update)
        return total * update

    return Env(target=accumulate)


@backends(
    inductor=True,
)
def test_inplace_then_same_tensor_twice(backend):
    run_case(
        Case(
            "inplace_then_same_tensor_twice",
            build_accumulate,
            [Call(two), Call(two), Call(same, label="same tensor twice"), Call(two), Call(same)],
        ),
        backend,
    )


@backends()
def test_same_tensor_first_then_distinct(backend):
    run_case(
        Case(
            "same_tensor_first_then_distinct",
            build_accumulate,
            [Call(same), Call(same), Call(two, label="distinct"), Call(same)],
        ),
        backend,
    )


# --- `a is b` between arguments -----------------------------------------------

IS_SOURCE = """
import torch

def blend(a, b, w=0.5):
    if a is b:
        return a.clone()          # nothing to blend
    return a * w + b * (1 - w)
"""


def build_is():
    ns = load_program(IS_SOURCE, "is_branch")
    return Env(ns=ns, target=ns.blend)


@backends()
def test_identity_branch(backend):
    run_case(
        Case(
            "identity_branch",
            build_is,
            [Call(two), Call(two), Call(same, label="a is b"), Call(two), Call(same)],
        ),
        backend,
    )


# --- a view of an argument passed beside it ------------------------------------


def build_rows():
    def scale_then_read(table, row):
        table.mul_(2)
        return row.sum() + table.sum()

    return Env(target=scale_then_read)


def table_and_copy(env):
    table = torch.randn(3, 4)
    return table, table[1].clone()


def table_and_view(env):
    table = torch.randn(3, 4)
    return table, table[1]


@backends()
def test_view_of_argument_beside_it(backend):
    run_case(
        Case(
            "view_of_argument_beside_it",
            build_rows,
            [
                Call(table_and_copy),
                Call(table_and_copy),
                Call(table_and_view, label="row is a view"),
            ],
        ),
        backend,
    )


# --- an argument that is a view of the module's own buffer ---------------------


class RunningSum(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("acc", torch.zeros(2, 3))

    def forward(self, x):
        self.acc.add_(x)
        return self.acc * x


def build_running_sum():
    return Env(target=RunningSum())


@backends()
def test_argument_is_view_of_buffer(backend):
    run_case(
        Case(
            "argument_is_view_of_buffer",
            build_running_sum,
            [
                *calls(2, lambda env: torch.randn(2, 3)),
                Call(lambda env: env.target.acc[:, :], label="x is a view of self.acc"),
                Call(lambda env: torch.randn(2, 3)),
            ],
        ),
        backend,
    )


# --- the module's own buffer passed as the argument ----------------------------


@backends()
def test_argument_is_the_buffer(backend):
    run_case(
        Case(
            "argument_is_the_buffer",
            build_running_sum,
            [
                *calls(2, lambda env: torch.randn(2, 3)),
                Call(lambda env: env.target.acc, label="x is self.acc"),
                Call(lambda env: torch.randn(2, 3)),
                Call(lambda env: env.target.acc),
            ],
        ),
        backend,
    )


# --- in-place on overlapping memory raises as in eager -------------------------------


def build_bump():
    def bump(x):
        x.add_(1)
        return x.sum()

    return Env(target=bump)


@backends()
def test_inplace_on_expanded_argument_raises(backend):
    run_case(
        Case(
            "inplace_on_expanded_argument_raises",
            build_bump,
            [
                *calls(2, lambda env: torch.randn(3, 3)),
                Call(
                    lambda env: torch.randn(3, 1).expand(3, 3), label="expanded (internal overlap)"
                ),
                Call(lambda env: torch.randn(3, 3)),
            ],
        ),
        backend,
    )


def build_shift():
    def shift(x, y):
        torch.mul(x, 2, out=y)
        return y.sum()

    return Env(target=shift)


def overlapping(env):
    base = torch.randn(5)
    return base[:4], base[1:]


@backends()
def test_out_overlapping_input_raises(backend):
    run_case(
        Case(
            "out_overlapping_input_raises",
            build_shift,
            [Call(two), Call(two), Call(overlapping, label="out overlaps the input"), Call(two)],
        ),
        backend,
    )


# --- returning an argument: identity kept -------------------------------------------


def build_passthrough():
    def normalize_(x, eps=1e-6):
        x.div_(x.norm() + eps)
        return x

    return Env(target=normalize_)


@backends(inductor=True)
def test_returns_the_argument_itself(backend):
    run_case(
        Case(
            "returns_the_argument_itself",
            build_passthrough,
            calls(3, lambda env: (torch.randn(5),)),
        ),
        backend,
    )
