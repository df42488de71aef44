"""A monitoring run that can't become a record stops monitoring, not the records.

A model whose setting switches it onto an unsupported construct (here a
generator made inside the call, which a replay cannot make again) used to run
eagerly from then on, even for the calls its existing record fits.  Now the
records keep replaying what their guards accept; only the other calls run
eagerly, and no further monitoring run is made for them.
"""

from __future__ import annotations

import torch

import fullgraph.runtime as fr

flag = {"noise": False}


def step(x):
    if flag["noise"]:
        generator = torch.Generator().manual_seed(0)
        return x + torch.rand(x.shape, generator=generator)
    return x * 2


def test_records_replay_after_a_run_that_could_not_be_recorded():
    flag["noise"] = False
    compiled = fr.compile(step, backend="eager")
    x = torch.randn(3)
    compiled(x)
    compiled(x)
    assert compiled.stats.hits == 1
    flag["noise"] = True
    noisy = x + torch.rand(3, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(compiled(x), noisy)  # monitored, not recordable
    torch.testing.assert_close(compiled(x), noisy)  # eager, not monitored again
    stats = compiled.stats
    assert stats.monitor_runs == 2
    assert stats.fallback_reason is None
    assert "Generator" in stats.monitoring_stopped
    assert stats.fallbacks == 1
    flag["noise"] = False
    torch.testing.assert_close(compiled(x), x * 2)
    assert stats.hits == 2 and stats.monitor_runs == 2


def test_without_records_the_function_runs_eagerly():
    flag["noise"] = True
    compiled = fr.compile(step, backend="eager")
    x = torch.randn(3)
    compiled(x)
    assert "Generator" in compiled.stats.fallback_reason
    assert compiled.stats.monitoring_stopped is None
    flag["noise"] = False
    torch.testing.assert_close(compiled(x), x * 2)
    assert compiled.stats.monitor_runs == 1 and compiled.stats.fallbacks == 1
