"""Is the record faster than eager?  A short trial decides, once per record.

A record can lose to eager: a small function whose guard and mock cost more
than its graphs save, or a graph Inductor makes no faster.  fullgraph must
never be slower than the program it compiles, so once a record has replayed
``WARM_HITS`` times (compiled kernels and caches are warm by then), the next
calls that its guard accepts alternate between the plain function and the
replay, ``SAMPLES`` of each, timed.  When the fastest replay is more than
``MARGIN`` above the fastest plain call, the calls that record's guard accepts
run eagerly from then on (the function's other records, for other sizes or
modes, still replay), and ``stats.slower_than_eager`` (and the report) say so
with both figures.  The fastest, not the median: on a shared machine a call is only ever
slowed down (a descheduled thread, another process's burst), and two slowed
replays out of three made a record that wins give way to eager for good.

The eager calls of the trial are real calls of the program (effects happen
once, as on any fallback); CUDA work is synchronized around each timed call
so that the clock sees the kernels, not just their launch.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import torch

WARM_HITS = 16  # replays before the trial starts
SAMPLES = 3  # timed calls of each kind
MARGIN = 1.10  # replay slower than eager by more than this: eager wins

clock: Callable[[], float] = time.perf_counter  # tests substitute a scripted clock


@dataclasses.dataclass
class EagerTrial:
    """The trial of one record: alternating eager and replay samples."""

    record: Any
    eager: list[float] = dataclasses.field(default_factory=list)
    replay: list[float] = dataclasses.field(default_factory=list)

    @property
    def wants_eager(self) -> bool:
        """The next accepted call runs eagerly (eager first, then alternating)."""
        return len(self.eager) <= len(self.replay) and len(self.eager) < SAMPLES

    @property
    def done(self) -> bool:
        return len(self.eager) >= SAMPLES and len(self.replay) >= SAMPLES

    def verdict(self) -> str | None:
        """Why eager should run instead (None: the record stays)."""
        eager, replay = min(self.eager), min(self.replay)
        if replay <= eager * MARGIN:
            return None
        return (
            f"eager is faster: replaying the record took {_ms(replay)} per call, "
            f"the plain function {_ms(eager)} (fastest of {SAMPLES} calls each, after "
            f"{WARM_HITS} replays); the calls it accepts run eagerly"
        )


def timed(call: Callable[[], Any], values: tuple) -> tuple[Any, float]:
    """``call()`` and how long it took, with CUDA work finished on both sides."""
    cuda = _uses_cuda(values)
    if cuda:
        torch.cuda.synchronize()
    start = clock()
    result = call()
    if cuda:
        torch.cuda.synchronize()
    return result, clock() - start


def _uses_cuda(values: tuple) -> bool:
    return torch.cuda.is_initialized() and any(
        isinstance(v, torch.Tensor) and v.is_cuda for v in values
    )


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"
