"""Class 11: crashes where eager works.

Generated guard or graph code must be valid for any object it refers to
(lambdas, ``operator.is_``, tensor classes such as ``torch.HalfTensor``
passed as arguments, objects without a usable name); an argument whose type
changes between calls; ``generator=`` keyword arguments; ``nn.LazyLinear``;
slice assignment into lists.
"""

from __future__ import annotations

import operator

import torch
from harness import Call, Case, Do, Env, backends, calls, load_program, program_env, run_case


def x3(env):
    return torch.randn(3)


LAMBDA = """
import torch

squash = lambda t: t.sigmoid() * 2

def head(x):
    return squash(x) - 1
"""


def build_lambda():
    ns = load_program(LAMBDA, "lambda_global")
    return Env(ns=ns, target=ns.head)


@backends()
def test_global_lambda(backend):
    run_case(Case("global_lambda", build_lambda, calls(3, x3)), backend)


def build_lambda_attr():
    class Wrapper(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fn = lambda t: t * 3

        def forward(self, x):
            return self.fn(x) + 1

    return Env(target=Wrapper())


@backends()
def test_lambda_attribute(backend):
    run_case(Case("lambda_attribute", build_lambda_attr, calls(3, x3)), backend)


def build_operator_is():
    def pick(a, b):
        if operator.is_(a, b):
            return a * 2
        return a + b

    return Env(target=pick)


@backends()
def test_operator_is(backend):
    def same(env):
        t = torch.randn(3)
        return t, t

    run_case(
        Case(
            "operator_is",
            build_operator_is,
            [
                Call(lambda env: (torch.randn(3), torch.randn(3))),
                Call(lambda env: (torch.randn(3), torch.randn(3))),
                Call(same),
            ],
        ),
        backend,
    )


def build_tensor_class():
    def cast(x, cls):
        return x.type(cls) * 2

    return Env(target=cast)


@backends()
def test_tensor_class_as_argument(backend):
    run_case(
        Case(
            "tensor_class_as_argument",
            build_tensor_class,
            [
                Call(lambda env: (torch.randn(3), torch.HalfTensor)),
                Call(lambda env: (torch.randn(3), torch.HalfTensor)),
                Call(lambda env: (torch.randn(3), torch.DoubleTensor), label="DoubleTensor"),
            ],
        ),
        backend,
    )


def build_dtype_arg():
    def cast(x, dtype):
        return x.to(dtype) + 1

    return Env(target=cast)


@backends()
def test_dtype_argument_changes(backend):
    run_case(
        Case(
            "dtype_argument_changes",
            build_dtype_arg,
            [
                Call(lambda env: (torch.randn(3), torch.float16)),
                Call(lambda env: (torch.randn(3), torch.float16)),
                Call(lambda env: (torch.randn(3), torch.float64)),
                Call(lambda env: (torch.randn(3), torch.int32)),
            ],
        ),
        backend,
    )


def build_type_changes():
    def add(x, bias):
        return x + bias

    return Env(target=add)


@backends(inductor=True)
def test_argument_type_changes(backend):
    run_case(
        Case(
            "argument_type_changes",
            build_type_changes,
            [
                Call(lambda env: (torch.randn(3), 1)),
                Call(lambda env: (torch.randn(3), 2)),
                Call(lambda env: (torch.randn(3), torch.ones(3)), label="bias is a tensor"),
                Call(lambda env: (torch.randn(3), 2.5), label="float"),
                Call(lambda env: (torch.randn(3), 3)),
                Call(lambda env: (torch.randn(3), None), label="None: eager raises"),
            ],
        ),
        backend,
    )


def build_generator():
    gen = torch.Generator().manual_seed(123)

    def sample(x):
        return x + torch.randn(x.shape, generator=gen), torch.rand(2, generator=gen)

    return Env(target=sample, gen=gen)


@backends(
    inductor=True,
)
def test_generator_keyword(backend):
    run_case(
        Case(
            "generator_keyword",
            build_generator,
            [*calls(3, x3), Do(lambda env: env.gen.manual_seed(7), "gen.manual_seed(7)"), Call(x3)],
            watch=lambda env: {"gen_state": env.gen.get_state()},
        ),
        backend,
    )


def build_lazy():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.LazyLinear(4), torch.nn.ReLU())
    return Env(target=model)


@backends()
def test_lazy_linear(backend):
    run_case(Case("lazy_linear", build_lazy, calls(3, lambda env: torch.randn(2, 5))), backend)


def build_slice_assign():
    def rotate(xs, x):
        xs[1:3] = [x, x * 2]
        xs[:1] = []
        return torch.stack(xs).sum(0), len(xs)

    return Env(target=rotate)


@backends()
def test_list_slice_assignment(backend):
    run_case(
        Case(
            "list_slice_assignment",
            build_slice_assign,
            [
                Call(lambda env: ([torch.ones(3) * i for i in range(4)], torch.randn(3)))
                for _ in range(3)
            ],
        ),
        backend,
    )


def build_unnamed_object():
    class _Scale:
        def __init__(self, k):
            self.k = k

        def __call__(self, t):
            return t * self.k

    objs = {"a-b": _Scale(2.0)}

    def apply(x):
        return objs["a-b"](x) + 1

    return Env(target=apply, objs=objs)


@backends()
def test_callable_object_in_dict_with_odd_key(backend):
    run_case(
        Case(
            "callable_object_in_dict_with_odd_key",
            build_unnamed_object,
            [*calls(2, x3), Do(lambda env: setattr(env.objs["a-b"], "k", 5.0), "k = 5"), Call(x3)],
        ),
        backend,
    )


PACKED_GRU = """
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

torch.manual_seed(0)

class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(4, 6, batch_first=True)

    def forward(self, x, lengths):
        self.gru.flatten_parameters()
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, h = self.gru(packed)              # reads the batch sizes' values
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
        return out, h

model = Tagger().eval()
"""


@backends(inductor=True)
def test_packed_sequence_rnn(backend):
    # pack_padded_sequence's rows are the sum of the lengths, and the GRU reads the batch
    # sizes: data-dependent, so they run between graphs (Inductor's fake run failed).
    def batch(lengths):
        return lambda env: (torch.randn(3, 5, 4), torch.tensor(lengths))

    run_case(
        Case(
            "packed_gru",
            lambda: program_env(PACKED_GRU, "model"),
            [
                Call(batch([5, 3, 2]), context=lambda env: torch.no_grad()),
                Call(batch([5, 3, 3]), context=lambda env: torch.no_grad()),
                Call(batch([4, 4, 1]), context=lambda env: torch.no_grad()),
                Call(batch([5, 3, 2]), context=lambda env: torch.no_grad()),
            ],
            min_hits=1,
        ),
        backend,
    )
