"""Calls on objects the function itself makes are not replayed on the monitoring run's object.

A library object made inside the call (``warnings.catch_warnings()``,
``random.Random(seed)``) is a new object on every eager call.  A record that
replayed a call on it would call the monitoring run's object again: the
``catch_warnings`` exit restored the warning filters saved on the first call
(undoing the user's ``simplefilter`` made since), and a seeded generator went
on from where the first call left it.  Such calls make the run unrecordable;
the function runs as it is, with the reason in the report.
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


def test_warning_filters_changed_between_calls_survive_the_compiled_call():
    compiled = fg_compile(quiet_relu, backend="eager", eager_check=False)
    with warnings.catch_warnings():  # the test's own filters stay as they were
        for step in range(4):
            if step == 2:
                warnings.simplefilter("error", UserWarning)
            x = torch.randn(3)
            before = list(warnings.filters)
            torch.testing.assert_close(compiled(x), quiet_relu(x))
            assert list(warnings.filters) == before, f"call {step} changed the filters"
    assert compiled.stats.hits == 0


def test_a_generator_made_in_the_call_starts_afresh_each_call():
    compiled = fg_compile(seeded_noise, backend="eager", eager_check=False)
    for _ in range(3):
        x = torch.zeros(2)
        torch.testing.assert_close(compiled(x), seeded_noise(x))
    assert compiled.stats.hits == 0


def test_the_report_says_why_the_call_is_not_recorded():
    report = explain(quiet_relu, torch.randn(3))
    details = [b.detail for b in report.breaks if b.category.code == "FG205"]
    assert any("catch_warnings the function created" in detail for detail in details), details
