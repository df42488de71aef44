"""Measuring one callable: wall time, peak tensor memory, and agreement with eager.

Timings synchronize the device around each call so GPU work is counted where
it happens.  Peak memory is the high-water mark of tensor memory a call
allocates above what was live when it started: on CUDA from the caching
allocator's statistics, on CPU from the profiler's allocation events (the
process's resident size would count Python objects and the allocator's free
lists, which say nothing about a compiler).  Weights and inputs are live
before the call and are not counted.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from collections.abc import Callable, Iterable
from typing import Any

import torch

from bench.zoo import ModelInputs


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed_call(fn: Callable[..., Any], inputs: ModelInputs, device: str) -> tuple[Any, float]:
    """Call ``fn`` once; return its result and the wall time in seconds."""
    synchronize(device)
    start = time.perf_counter()
    result = fn(*inputs.args, **inputs.kwargs)
    synchronize(device)
    return result, time.perf_counter() - start


def median(samples: Iterable[float]) -> float:
    return statistics.median(list(samples))


def geometric_mean(values: Iterable[float]) -> float | None:
    values = [v for v in values if v > 0 and math.isfinite(v)]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def peak_memory_bytes(fn: Callable[..., Any], inputs: ModelInputs, device: str) -> int:
    """Peak bytes of tensor memory one call of ``fn`` holds above its starting level."""
    if device.startswith("cuda"):
        synchronize(device)
        baseline = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        fn(*inputs.args, **inputs.kwargs)
        synchronize(device)
        return max(0, torch.cuda.max_memory_allocated() - baseline)
    return _cpu_peak_memory_bytes(fn, inputs)


def _cpu_peak_memory_bytes(fn: Callable[..., Any], inputs: ModelInputs) -> int:
    from torch._C._profiler import _EventType
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn(*inputs.args, **inputs.kwargs)
    # The profiler's event tree holds one Allocation event per allocation (+bytes)
    # and free (-bytes); the peak of their running sum in time order is the
    # call's peak.  (The FunctionEvent view attributes bytes to every enclosing
    # op, so it double-counts and loses the order.)
    changes: list[tuple[int, int]] = []
    pending = list(prof.profiler.kineto_results.experimental_event_tree())
    while pending:
        event = pending.pop()
        if event.tag == _EventType.Allocation:
            changes.append((event.start_time_ns, event.extra_fields.alloc_size))
        pending.extend(event.children)
    level = peak = 0
    for _, size in sorted(changes):
        level += size
        peak = max(peak, level)
    return peak


def tensors_of(value: Any) -> list[torch.Tensor]:
    """The tensors of a model output, in a stable order (tuples, dicts, ModelOutput)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if hasattr(value, "to_tuple"):  # transformers' ModelOutput
        return tensors_of(value.to_tuple())
    if isinstance(value, dict):
        return [t for key in sorted(value, key=str) for t in tensors_of(value[key])]
    if isinstance(value, (tuple, list)):
        return [t for item in value for t in tensors_of(item)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return tensors_of([getattr(value, f.name) for f in dataclasses.fields(value)])
    return []


@dataclasses.dataclass
class OutputCheck:
    """Whether a compiler's output matches eager's, and by how much it differs."""

    equal: bool
    max_abs_diff: float
    message: str = ""


# Inductor reorders float reductions; differences of this size are rounding, not bugs.
RTOL = 1e-3
ATOL = 1e-4


def compare_outputs(expected: Any, actual: Any) -> OutputCheck:
    want, got = tensors_of(expected), tensors_of(actual)
    if len(want) != len(got):
        return OutputCheck(False, math.inf, f"{len(got)} output tensors, eager has {len(want)}")
    worst = 0.0
    for index, (w, g) in enumerate(zip(want, got)):
        if w.shape != g.shape or w.dtype != g.dtype:
            return OutputCheck(
                False,
                math.inf,
                f"output {index}: {tuple(g.shape)} {g.dtype}, eager {tuple(w.shape)} {w.dtype}",
            )
        if w.numel() == 0:
            continue
        w_cpu, g_cpu = w.detach().cpu(), g.detach().cpu()
        if w.is_floating_point() or w.is_complex():
            diff = (w_cpu.double() - g_cpu.double()).abs().max().item()
            worst = max(worst, diff)
            if not torch.allclose(g_cpu, w_cpu, rtol=RTOL, atol=ATOL, equal_nan=True):
                return OutputCheck(False, worst, f"output {index} differs by up to {diff:.3g}")
        elif not torch.equal(w_cpu, g_cpu):
            return OutputCheck(False, math.inf, f"output {index} ({w.dtype}) differs")
    return OutputCheck(True, worst)
