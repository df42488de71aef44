"""Constructs whose bytecode differs between CPython 3.11, 3.12 and 3.13.

Each test is about an opcode the handlers see differently per version
(BINARY_SLICE and STORE_SLICE since 3.12, inlined comprehensions since 3.12,
KW_NAMES vs CALL_KW, CALL_FUNCTION_EX's layout, LOAD_SUPER_ATTR, a branch
with an EXTENDED_ARG prefix, which 3.11 traces at the prefix only): the
compiled callable must match eager call after call, and a change to what the
construct read must not be replayed from a stale record.
"""

from __future__ import annotations

import torch

import fullgraph.runtime as fr


class Sliced(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scales = [1.0, 2.0, 3.0, 4.0]

    def forward(self, x):
        a, b = self.scales[1:3]  # BINARY_SLICE on 3.12+
        return x * a + b


def test_a_slice_of_an_external_list_is_guarded(assert_same):
    model = Sliced()
    eager = Sliced()
    compiled = fr.compile(model, backend="eager")
    x = torch.randn(3)
    assert_same(compiled(x), eager(x))
    assert_same(compiled(x), eager(x))
    assert compiled.stats.hits == 1
    model.scales[2] = 10.0
    eager.scales[2] = 10.0
    assert_same(compiled(x), eager(x))


class Layers(torch.nn.Module):
    def __init__(self, count=2):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(4, 4) for _ in range(count))

    def forward(self, x):
        outs = [layer(x) for layer in self.layers]  # inlined on 3.12+ (PEP 709)
        return torch.stack(outs).sum(dim=0, keepdim=False)  # keyword call


def test_an_inlined_comprehension_over_a_module_list_guards_its_length(assert_same):
    model = Layers()
    compiled = fr.compile(model, backend="eager")
    x = torch.randn(2, 4)
    assert_same(compiled(x), model(x))
    assert_same(compiled(x), model(x))
    assert compiled.stats.hits == 1
    model.layers.append(torch.nn.Linear(4, 4))
    assert_same(compiled(x), model(x))
    assert compiled.stats.monitor_runs == 2


def _add_all(*values):
    total = values[0]
    for value in values[1:]:
        total = total + value
    return total


def star_call(x):
    parts = (x * i for i in range(1, 4))
    return _add_all(*parts)  # CALL_FUNCTION_EX with a generator


def test_star_arguments_from_a_generator_are_consumed_once(replay):
    replay(fr.compile(star_call, backend="eager"), star_call, lambda: (torch.randn(3),))


class Base(torch.nn.Module):
    def forward(self, x):
        return x + 1


class Derived(Base):
    def forward(self, x):
        return super().forward(x) * 2  # LOAD_SUPER_ATTR on 3.12+


def test_super_method_calls(replay):
    model = Derived()
    replay(fr.compile(model, backend="eager"), model, lambda: (torch.randn(3),))


def _long_branch():
    """A branch on a symbolic number that jumps over 300 statements: its jump has an
    EXTENDED_ARG prefix."""
    lines = ["def long_branch(x, scale):", "    if scale > 0.5:"]
    lines += [f"        x = x + {i}" for i in range(300)]
    lines += ["    return x * scale"]
    namespace: dict = {}
    exec(compile("\n".join(lines), __file__, "exec"), namespace)  # noqa: S102 - test code
    return namespace["long_branch"]


long_branch = _long_branch()


def test_a_branch_with_an_extended_arg_is_observed(assert_same):
    compiled = fr.compile(long_branch, backend="eager")
    x = torch.randn(3)
    for scale in (0.75, 0.9, 0.25, 0.8, 0.1):
        assert_same(compiled(x, scale), long_branch(x, scale))
