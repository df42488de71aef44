"""A record that replays slower than the plain function is dropped for eager.

The trial (runtime/eager_check.py) times a few replays against a few plain
calls once the record is warm.  The clock is scripted here: each timed call
"takes" the cost given for its kind (eager or replay), so the verdict is
deterministic.
"""

from __future__ import annotations

import torch

import fullgraph.runtime as fr
from fullgraph.runtime import eager_check

WARM_THEN_TRIAL = 1 + eager_check.WARM_HITS + 2 * eager_check.SAMPLES


class ScriptedClock:
    """A clock under which an eager call lasts ``eager`` seconds and a replay ``replay``."""

    def __init__(self, monkeypatch, eager: float, replay: float | list[float]):
        self.compiled = None
        self.eager = eager
        # One cost for every replay, or one per timed replay in turn.
        self.replays = replay if isinstance(replay, list) else None
        self.replay = replay if self.replays is None else None
        self.now, self.reads = 0.0, 0
        monkeypatch.setattr(eager_check, "clock", self)

    def __call__(self) -> float:
        self.reads += 1
        if self.reads % 2 == 0:  # the end of a timed call
            if self.compiled.trial.wants_eager:
                self.now += self.eager
            else:
                self.now += self.replays.pop(0) if self.replays is not None else self.replay
        return self.now


effects: list = []


def scale(x):
    effects.append(1)  # an effect: once per call, whether replayed or run eagerly
    return x * 2


def _compile(clock: ScriptedClock, **options):
    compiled = fr.compile(scale, backend="eager", **options)
    clock.compiled = compiled
    return compiled


def test_a_record_slower_than_eager_gives_way_to_eager(monkeypatch):
    compiled = _compile(ScriptedClock(monkeypatch, eager=0.001, replay=0.002))
    effects.clear()
    for _ in range(WARM_THEN_TRIAL):
        x = torch.randn(3)
        torch.testing.assert_close(compiled(x), x * 2)
    stats = compiled.stats
    assert stats.eager_trial_calls == eager_check.SAMPLES
    assert stats.slower_than_eager == (
        "eager is faster: replaying the record took 2.000 ms per call, the plain function "
        f"1.000 ms (fastest of {eager_check.SAMPLES} calls each, after "
        f"{eager_check.WARM_HITS} replays); the calls it accepts run eagerly"
    )
    assert compiled.records[0].slower_than_eager == stats.slower_than_eager
    assert stats.slower_than_eager in compiled.report().notes
    before = stats.fallbacks
    x = torch.randn(3)
    torch.testing.assert_close(compiled(x), x * 2)
    assert stats.fallbacks == before + 1
    assert len(effects) == WARM_THEN_TRIAL + 1  # every call's effect, exactly once


def test_only_the_slower_record_gives_way_to_eager(monkeypatch):
    # Two records (two dtypes); the trial of the first finds it slower than eager.
    # Calls it accepts run eagerly from then on; the other dtype still replays.
    compiled = _compile(ScriptedClock(monkeypatch, eager=0.001, replay=0.002))
    for _ in range(WARM_THEN_TRIAL):
        compiled(torch.randn(3))
    assert compiled.records[0].slower_than_eager is not None
    assert compiled.stats.fallback_reason is None
    compiled(torch.randn(3, dtype=torch.float64))  # monitored: a record of its own
    hits, fallbacks = compiled.stats.hits, compiled.stats.fallbacks
    for _ in range(3):
        y, x = torch.randn(3, dtype=torch.float64), torch.randn(3)
        torch.testing.assert_close(compiled(y), y * 2)
        torch.testing.assert_close(compiled(x), x * 2)
    assert compiled.stats.hits == hits + 3  # the float64 record replays
    assert compiled.stats.fallbacks == fallbacks + 3  # float32 runs eagerly
    assert compiled.stats.monitor_runs == 2


def test_a_record_faster_than_eager_keeps_replaying(monkeypatch):
    compiled = _compile(ScriptedClock(monkeypatch, eager=0.001, replay=0.0005))
    for _ in range(WARM_THEN_TRIAL + 5):
        x = torch.randn(3)
        torch.testing.assert_close(compiled(x), x * 2)
    assert compiled.stats.slower_than_eager is None
    assert compiled.stats.eager_trial_calls == eager_check.SAMPLES
    assert compiled.stats.monitor_runs == 1
    assert compiled.stats.hits == WARM_THEN_TRIAL + 5 - 1 - eager_check.SAMPLES


def test_replays_slowed_by_a_busy_machine_do_not_give_the_record_up(monkeypatch):
    # Two of the three timed replays were interrupted (3 ms); the third shows what the
    # record costs (0.5 ms against eager's 1 ms): the record stays.
    slowed = [0.003, 0.0005, 0.003]
    compiled = _compile(ScriptedClock(monkeypatch, eager=0.001, replay=slowed))
    for _ in range(WARM_THEN_TRIAL + 2):
        x = torch.randn(3)
        torch.testing.assert_close(compiled(x), x * 2)
    assert compiled.stats.eager_trial_calls == eager_check.SAMPLES
    assert compiled.stats.slower_than_eager is None
    assert compiled.stats.fallbacks == 0


def test_within_the_margin_the_record_stays(monkeypatch):
    compiled = _compile(ScriptedClock(monkeypatch, eager=0.001, replay=0.00105))
    for _ in range(WARM_THEN_TRIAL):
        compiled(torch.randn(3))
    assert compiled.stats.slower_than_eager is None


def test_the_trial_can_be_turned_off(monkeypatch):
    compiled = _compile(ScriptedClock(monkeypatch, eager=0.001, replay=0.01), eager_check=False)
    for _ in range(WARM_THEN_TRIAL + 2):
        compiled(torch.randn(3))
    assert compiled.stats.eager_trial_calls == 0 and compiled.stats.slower_than_eager is None
