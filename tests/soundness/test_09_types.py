"""Class 9: types.

``torch.Size`` stays ``torch.Size`` when returned or printed; NamedTuples and
dataclasses keep their types (also as inputs whose fields change); dict
subclasses keep theirs.
"""

from __future__ import annotations

import torch
from harness import Call, Case, Env, backends, calls, load_program, run_case


def x23(env):
    return torch.randn(2, 3)


def build_shape():
    def describe(x):
        print("input shape", x.shape, x.size(1))
        return x.shape, x.size(), x[0].shape, tuple(x.shape)

    return Env(target=describe)


@backends(
    inductor=True,
)
def test_torch_size_returned_and_printed(backend):
    run_case(
        Case(
            "torch_size_returned_and_printed",
            build_shape,
            [
                *calls(2, x23),
                Call(lambda env: torch.randn(4, 3), label="new batch size"),
                Call(lambda env: torch.randn(5, 3)),
                Call(lambda env: torch.randn(6, 7), label="both sizes new"),
            ],
        ),
        backend,
    )


TYPES = """
import dataclasses
from typing import NamedTuple

import torch

class Output(NamedTuple):
    logits: torch.Tensor
    loss: torch.Tensor
    n: int

@dataclasses.dataclass
class Batch:
    x: torch.Tensor
    weight: float = 1.0

@dataclasses.dataclass
class Result:
    value: torch.Tensor
    shape: torch.Size
    tag: str

def forward(batch):
    logits = batch.x * batch.weight
    return Output(logits, logits.pow(2).mean(), batch.x.shape[0])

def wrap(x):
    return Result(x.sum(0), x.shape, "ok")
"""


def build_namedtuple():
    ns = load_program(TYPES, "types_nt")
    return Env(ns=ns, target=ns.forward)


@backends(inductor=True)
def test_namedtuple_output_dataclass_input(backend):
    def batch(weight, n=2):
        return lambda env: env.ns.Batch(torch.randn(n, 3), weight)

    run_case(
        Case(
            "namedtuple_output_dataclass_input",
            build_namedtuple,
            [
                Call(batch(1.0)),
                Call(batch(1.0)),
                Call(batch(0.5), label="weight 0.5"),
                Call(batch(2.0)),
                Call(batch(2.0, n=4), label="4 rows"),
            ],
        ),
        backend,
    )


def build_dataclass_out():
    ns = load_program(TYPES, "types_dc")
    return Env(ns=ns, target=ns.wrap)


@backends()
def test_dataclass_output_with_size(backend):
    run_case(
        Case(
            "dataclass_output_with_size",
            build_dataclass_out,
            [
                *calls(2, x23),
                Call(lambda env: torch.randn(5, 3)),
                Call(lambda env: torch.randn(7, 3)),
            ],
        ),
        backend,
    )


SUBCLASSES = """
import collections
import torch

class Features(dict):
    pass

Pair = collections.namedtuple("Pair", ["left", "right"])

def split(x):
    feats = Features(mean=x.mean(0), std=x.std(0))
    ordered = collections.OrderedDict(first=x[0], last=x[-1])
    return feats, ordered, Pair(*x.chunk(2, dim=1)), [x.dtype, x.device]
"""


def build_subclasses():
    ns = load_program(SUBCLASSES, "subclasses")
    return Env(ns=ns, target=ns.split)


@backends()
def test_dict_subclass_ordereddict_namedtuple(backend):
    run_case(
        Case(
            "dict_subclass_ordereddict_namedtuple",
            build_subclasses,
            calls(3, lambda env: torch.randn(3, 4)),
        ),
        backend,
    )


def build_size_arith():
    def plan(x):
        b, s = x.shape
        grid = torch.Size([b * 2, s])
        return x.new_zeros(grid).shape, grid.numel(), x.shape[1:] + (1,), x.view(grid[1], -1).shape

    return Env(target=plan)


@backends()
def test_size_arithmetic_results(backend):
    run_case(
        Case(
            "size_arithmetic_results",
            build_size_arith,
            [
                Call(lambda env: torch.randn(2, 4)),
                Call(lambda env: torch.randn(2, 4)),
                Call(lambda env: torch.randn(3, 4)),
                Call(lambda env: torch.randn(5, 4)),
            ],
        ),
        backend,
    )
