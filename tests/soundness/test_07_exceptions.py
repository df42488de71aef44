"""Class 7: control flow through exceptions.

A ``try``/``except`` whose taken path depends on external state (a key
present or not, an attribute present or not, a view that fails for some
sizes or strides): the guard covers what decided the path, also for
size-generic records.
"""

from __future__ import annotations

import torch
from harness import Call, Case, Do, Env, backends, calls, load_program, run_case


def x3(env):
    return torch.randn(3)


KEY = """
import torch

overrides = {}

def scale(x):
    try:
        factor = overrides["scale"]
    except KeyError:
        factor = 1.0
    return x * factor
"""


def build_key():
    ns = load_program(KEY, "key")
    return Env(ns=ns, target=ns.scale)


@backends(
    inductor=True,
)
def test_key_present_or_not(backend):
    def add(env):
        env.ns.overrides["scale"] = 4.0

    def remove(env):
        del env.ns.overrides["scale"]

    run_case(
        Case(
            "key_present_or_not",
            build_key,
            [
                *calls(2, x3),
                Do(add, "overrides['scale'] = 4"),
                *calls(2, x3),
                Do(remove, "del it"),
                *calls(2, x3),
            ],
        ),
        backend,
    )


ATTR = """
import torch

class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        try:
            temperature = self.temperature
        except AttributeError:
            temperature = 1.0
        return (self.lin(x) / temperature).softmax(-1)
"""


def build_attr():
    torch.manual_seed(0)
    ns = load_program(ATTR, "attr")
    return Env(ns=ns, target=ns.Head())


@backends()
def test_attribute_present_or_not(backend):
    def add(env):
        env.target.temperature = 0.25

    def remove(env):
        del env.target.temperature

    run_case(
        Case(
            "attribute_present_or_not",
            build_attr,
            [
                *calls(2, x3),
                Do(add, "self.temperature = 0.25"),
                *calls(2, x3),
                Do(remove, "del it"),
                Call(x3),
            ],
        ),
        backend,
    )


def build_view_fallback():
    def to_rows(x):
        try:
            rows = x.view(4, -1)
            path = "view"
        except RuntimeError:
            rows = x.reshape(4, -1)
            path = "reshape"
        return rows * 2, path

    return Env(target=to_rows)


@backends()
def test_view_fails_for_non_contiguous(backend):
    run_case(
        Case(
            "view_fails_for_non_contiguous",
            build_view_fallback,
            [
                *calls(2, lambda env: torch.randn(4, 6)),
                Call(lambda env: torch.randn(6, 4).t(), label="transposed 4x6"),
                Call(lambda env: torch.randn(4, 6)),
            ],
        ),
        backend,
    )


def build_view_sizes():
    def chunks_of_four(x):
        try:
            return x.view(-1, 4).sum(1), True
        except RuntimeError:
            return x.sum().reshape(1), False

    return Env(target=chunks_of_four)


@backends()
def test_view_fails_for_some_sizes_size_generic(backend):
    sizes = [8, 12, 16, 10, 20, 6]
    run_case(
        Case(
            "view_fails_for_some_sizes_size_generic",
            build_view_sizes,
            [Call(lambda env, n=n: torch.randn(n), label=f"size {n}") for n in sizes],
        ),
        backend,
    )


VALIDATE = """
import torch

STRICT = False

class ShapeError(ValueError):
    pass

def check(x):
    if x.dim() != 2:
        raise ShapeError(f"expected 2-D input, got {x.dim()}-D")

def safe_forward(x):
    try:
        check(x)
    except ShapeError as error:
        if STRICT:
            raise
        x = x.reshape(1, -1)
    return x.mean(-1)
"""


def build_validate():
    ns = load_program(VALIDATE, "validate")
    return Env(ns=ns, target=ns.safe_forward)


@backends()
def test_reraise_depends_on_global(backend):
    def strict(env):
        env.ns.STRICT = True

    run_case(
        Case(
            "reraise_depends_on_global",
            build_validate,
            [
                *calls(2, lambda env: torch.randn(2, 3)),
                *calls(2, lambda env: torch.randn(6)),
                Do(strict, "STRICT = True"),
                Call(lambda env: torch.randn(6)),
                Call(lambda env: torch.randn(2, 3)),
            ],
        ),
        backend,
    )


def build_next_default():
    def first_or_zero(items, x):
        try:
            head = next(iter(items))
        except StopIteration:
            head = torch.zeros(3)
        return x + head

    return Env(target=first_or_zero)


@backends()
def test_stop_iteration_on_empty_list(backend):
    run_case(
        Case(
            "stop_iteration_on_empty_list",
            build_next_default,
            [
                Call(lambda env: ([torch.ones(3)], torch.randn(3))),
                Call(lambda env: ([torch.ones(3)], torch.randn(3))),
                Call(lambda env: ([], torch.randn(3)), label="empty list"),
                Call(lambda env: ([], torch.randn(3))),
                Call(lambda env: ([torch.ones(3) * 2], torch.randn(3))),
            ],
        ),
        backend,
    )


def build_index_error():
    def pick(x, idx):
        try:
            return x[idx] * 2
        except IndexError:
            return x[-1]

    return Env(target=pick)


@backends()
def test_index_error_depends_on_int_argument(backend):
    run_case(
        Case(
            "index_error_depends_on_int_argument",
            build_index_error,
            [
                Call(lambda env: (torch.randn(4), 1)),
                Call(lambda env: (torch.randn(4), 2)),
                Call(lambda env: (torch.randn(4), 9), label="out of range"),
                Call(lambda env: (torch.randn(4), 3)),
                Call(lambda env: (torch.randn(4), 12)),
            ],
        ),
        backend,
    )
