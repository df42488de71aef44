"""Calls on objects the function itself makes are not replayed on the monitoring run's object.

A library object made inside the call (``warnings.catch_warnings()``,
``random.Random(seed)``) is a new object on every eager call.  A record that
replayed a call on it would call the monitoring run's object again: the
``catch_warnings`` exit restored the warning filters saved on the first call
(undoing the user's ``simplefilter`` made since), and a seeded generator went
on from where the first call left it.  Such calls make the run unrecordable;
the function runs as it is, with the reason in the report.

The common ``with warnings.catch_warnings(): warnings.simplefilter(...)``
block, whose body only changes filters, is replayed whole instead, on a new
object after the graph (``runtime/monitor/warnings_blocks.py``): one graph, and the
process's warning state is eager's after every call.
"""

from __future__ import annotations

import random
import warnings

import torch

from fullgraph.runtime import compile as fg_compile
from fullgraph.runtime import explain


def quiet_relu(x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = x.relu() * 2
    return y + 1


def seeded_noise(x):
    generator = random.Random(0)
    return x + generator.random()


def filtered_gelu(x):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=UserWarning, message="approximate")
        warnings.simplefilter("error", DeprecationWarning)
        y = torch.nn.functional.gelu(x) - 1
    return y.sum()


def warns_inside(x):
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.warn("inside the block")
        y = x * 2
    return y


def recording(x):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = x * 3
    return y, len(caught)


def _differential(function, calls: int = 4):
    compiled = fg_compile(function, backend="eager", eager_check=False)
    with warnings.catch_warnings(record=True) as shown:  # the test's own filters stay
        warnings.simplefilter("default")
        for step in range(calls):
            if step == 2:
                warnings.simplefilter("error", UserWarning)
            x = torch.randn(3)
            before = list(warnings.filters)
            torch.testing.assert_close(compiled(x), function(x))
            assert list(warnings.filters) == before, f"call {step} changed the filters"
    return compiled, shown


def test_a_filters_only_block_replays_whole_and_keeps_the_users_filters():
    for function in (quiet_relu, filtered_gelu):
        compiled, _ = _differential(function)
        assert compiled.stats.hits >= 2, function.__name__  # step 2 changed the filters
        assert explain(function, torch.randn(3)).graph_count == 1


def test_a_block_that_does_more_than_filter_is_not_replayed():
    for function in (warns_inside, recording):
        compiled, _ = _differential(function)
        assert compiled.stats.hits == 0, function.__name__


def test_a_generator_made_in_the_call_starts_afresh_each_call():
    compiled = fg_compile(seeded_noise, backend="eager", eager_check=False)
    for _ in range(3):
        x = torch.zeros(2)
        torch.testing.assert_close(compiled(x), seeded_noise(x))
    assert compiled.stats.hits == 0


def test_the_report_says_why_the_call_is_not_recorded():
    with warnings.catch_warnings(record=True):  # the program's warning, kept off the output
        report = explain(warns_inside, torch.randn(3))
    details = [b.detail for b in report.breaks if b.category.code == "FG205"]
    assert any("catch_warnings the function created" in detail for detail in details), details
