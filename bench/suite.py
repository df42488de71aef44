"""Running one model through every compiler and collecting what the report shows.

For each model, in this order: eager reference outputs; graph and break counts
from each compiler's explain tool; cold start (each compiler compiled afresh,
with empty Inductor caches, fullgraph first so that any kernel it leaves
behind can only help ``torch.compile``); steady-state step times per batch
size, timed in interleaved rounds so that noise from a shared machine falls on
every compiler alike; peak memory at the largest batch; and the per-call time
outside the compiled graphs at batch 1.  Any failure is recorded against the
model or the compiler it came from and the run goes on.
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any

import torch

from bench.compilers import EAGER, FULLGRAPH, FullgraphRunner
from bench.graph_timer import outside_graph_seconds
from bench.measure import compare_outputs, median, peak_memory_bytes, timed_call
from bench.zoo import ModelCase, ModelInputs

OK = "ok"
FAILED = "failed"
NOT_AVAILABLE = "not available"
SKIPPED = "skipped"
OWN_INPUTS = "own"  # the input size label of programs that ship their inputs


@dataclasses.dataclass(frozen=True)
class Settings:
    device: str = "cpu"
    batch_sizes: tuple[int, ...] = (1, 8)
    repetitions: int = 30
    warmup: int = 3
    stage_timeout_s: float = 300.0
    # Where cold starts put their empty Inductor caches (None: the system temp folder).
    cache_root: str | None = None


@dataclasses.dataclass
class CompilerResult:
    compiler: str
    status: str = OK
    error: str | None = None
    # Problems that did not stop the measurement (a failed explain, outputs that differ).
    notes: list[str] = dataclasses.field(default_factory=list)
    graphs: int | None = None
    breaks: int | None = None
    break_sites: list[str] = dataclasses.field(default_factory=list)
    first_call_s: float | None = None
    cold_start_s: float | None = None
    # Median step time per input size: "1", "8" (batch sizes) or "own" (the program's inputs).
    step_s: dict[str, float] = dataclasses.field(default_factory=dict)
    outputs_equal: bool | None = None
    max_abs_diff: float | None = None
    peak_memory_bytes: int | None = None
    outside_graph_s: float | None = None  # per call at the smallest input size
    counters: dict[str, Any] | None = None
    # fullgraph only: whether the timed steady-state calls replayed a record (its
    # hit counter grew) rather than falling back to eager; None when unknown.
    replayed: bool | None = None


@dataclasses.dataclass
class ModelResult:
    name: str
    origin: str
    status: str = OK
    error: str | None = None
    duration_s: float | None = None
    # Labels of the input sizes measured: batch sizes, or OWN_INPUTS.
    input_sizes: list[str] = dataclasses.field(default_factory=list)
    # False when two eager calls on the same inputs already differ: outputs are then not checked.
    outputs_comparable: bool = True
    compilers: dict[str, CompilerResult] = dataclasses.field(default_factory=dict)


class StageTimeout(Exception):
    """A build, compile or measurement stage ran past its time limit."""


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    # SIGALRM interrupts Python code only; a stage stuck inside one native call
    # is interrupted when that call returns, which bounds every stage seen so far.
    def expire(signum: int, frame: Any) -> None:
        raise StageTimeout(f"stage exceeded {seconds:.0f} s")

    if seconds <= 0 or not hasattr(signal, "setitimer"):
        yield
        return
    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def _empty_compile_caches(parent: str | None) -> Iterator[None]:
    """Empty Inductor caches (on disk and in memory) so a cold start compiles everything."""
    try:
        from torch._inductor.utils import fresh_cache
    except ImportError:  # older torch: the cache is whatever TORCHINDUCTOR_CACHE_DIR holds
        yield
        return
    with fresh_cache(dir=parent):
        yield


_INDUCTOR_WARMED: list[bool] = []


def _warm_inductor_once(settings: Settings) -> None:
    """Pay Inductor's once-per-process start (imports, the C++ toolchain probe, worker
    pools: about 16 s on the 2-core CPU machine) before the first cold start.

    Whichever compiler's cold start came first in the process paid it: fullgraph,
    which runs first, looked 3x slower than torch.compile on the first model (BERT)
    although Inductor compiles its graph in less time than Dynamo's.
    """
    if _INDUCTOR_WARMED:
        return
    _INDUCTOR_WARMED.append(True)
    with contextlib.suppress(Exception), _empty_compile_caches(settings.cache_root):
        warm = torch.compile(lambda x: torch.relu(x) * 2 + 1, backend="inductor")
        warm(torch.randn(8, device=settings.device))
    torch._dynamo.reset()


def describe(exc: BaseException) -> str:
    message = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {message[0] if message else ''}".strip()


class _ModelRun:
    """The state of one model's measurement: its inputs, references and live compilers."""

    def __init__(self, case: ModelCase, runners: list[Any], settings: Settings) -> None:
        self.case = case
        self.runners = {runner.name: runner for runner in runners}
        self.settings = settings
        self.result = ModelResult(case.name, case.origin)
        self.compiled: dict[str, Callable[..., Any]] = {}
        self.model: Any = None
        # Input sizes by label: batch sizes, or the one size a program ships.
        self.sizes = (
            {OWN_INPUTS: 0}
            if case.fixed_inputs
            else {str(batch): batch for batch in settings.batch_sizes}
        )
        labels = list(self.sizes)
        self.smallest, self.largest = labels[0], labels[-1]
        self.result.input_sizes = labels
        self.inputs: dict[str, ModelInputs] = {}
        self.expected: dict[str, Any] = {}

    def stage(self) -> contextlib.AbstractContextManager[None]:
        return _time_limit(self.settings.stage_timeout_s)

    def fail(self, name: str, stage: str, exc: BaseException) -> None:
        entry = self.result.compilers[name]
        entry.status = FAILED
        entry.error = f"{stage}: {describe(exc)}"
        entry.notes.append(traceback.format_exc(limit=-8))
        self.compiled.pop(name, None)

    def check(self, name: str, size: str, output: Any) -> None:
        if not self.result.outputs_comparable:
            return
        entry = self.result.compilers[name]
        verdict = compare_outputs(self.expected[size], output)
        entry.max_abs_diff = max(entry.max_abs_diff or 0.0, verdict.max_abs_diff)
        if entry.outputs_equal is None:
            entry.outputs_equal = True
        if not verdict.equal:
            entry.outputs_equal = False
            entry.notes.append(f"inputs {size}: {verdict.message}")

    # --- stages --------------------------------------------------------------------

    def build(self) -> bool:
        device = self.settings.device
        try:
            with self.stage():
                self.model = self.case.build()
                if isinstance(self.model, torch.nn.Module):
                    self.model = self.model.to(device)
                for size, batch in self.sizes.items():
                    inputs = self.inputs[size] = self.case.make_inputs(batch).to(device)
                    self.expected[size] = self.model(*inputs.args, **inputs.kwargs)
                    # A program whose own repeated calls differ (state it updates, random
                    # numbers it draws) has no single right answer to compare against.
                    again = self.model(*inputs.args, **inputs.kwargs)
                    if not compare_outputs(self.expected[size], again).equal:
                        self.result.outputs_comparable = False
        except Exception as exc:  # noqa: BLE001
            self.result.status = FAILED
            self.result.error = f"build: {describe(exc)}"
            return False
        for name, runner in self.runners.items():
            entry = self.result.compilers[name] = CompilerResult(name)
            reason = runner.unavailable_reason()
            if reason:
                entry.status, entry.error = NOT_AVAILABLE, reason
        return True

    def available(self, *, skip_eager: bool = False) -> list[Any]:
        return [
            runner
            for name, runner in self.runners.items()
            if self.result.compilers[name].status == OK and not (skip_eager and name == EAGER)
        ]

    def count_graphs(self) -> None:
        for runner in self.available(skip_eager=True):
            entry = self.result.compilers[runner.name]
            try:
                with self.stage():
                    stats = runner.graph_stats(self.model, self.inputs[self.smallest])
            except Exception as exc:  # noqa: BLE001
                entry.notes.append(f"explain: {describe(exc)}")
                continue
            if stats is not None:
                entry.graphs, entry.breaks, entry.break_sites = (
                    stats.graphs,
                    stats.breaks,
                    stats.break_sites,
                )

    def cold_start(self) -> None:
        size = self.smallest
        if any(getattr(runner, "backend", None) == "inductor" for runner in self.available()):
            _warm_inductor_once(self.settings)
        torch._dynamo.reset()
        order = sorted(self.available(), key=lambda runner: runner.name != FULLGRAPH)
        for runner in order:
            entry = self.result.compilers[runner.name]
            try:
                with self.stage(), _empty_compile_caches(self.settings.cache_root):
                    compiled = runner.compile(self.model)
                    first, first_s = timed_call(compiled, self.inputs[size], self.settings.device)
                    second, second_s = timed_call(compiled, self.inputs[size], self.settings.device)
            except Exception as exc:  # noqa: BLE001
                self.fail(runner.name, "compile", exc)
                continue
            # The first call of fullgraph is its monitoring run; the second is the first
            # that can replay a record (and may compile it), so both count as cold start.
            entry.first_call_s, entry.cold_start_s = first_s, first_s + second_s
            self.check(runner.name, size, first)
            self.check(runner.name, size, second)
            self.compiled[runner.name] = compiled

    def steady_state(self, size: str) -> None:
        settings = self.settings
        for name, compiled in list(self.compiled.items()):
            try:
                with self.stage():
                    for _ in range(settings.warmup):
                        output, _ = timed_call(compiled, self.inputs[size], settings.device)
                self.check(name, size, output)
            except Exception as exc:  # noqa: BLE001
                self.fail(name, f"warm-up at inputs {size}", exc)
        samples: dict[str, list[float]] = {name: [] for name in self.compiled}
        for _ in range(settings.repetitions):
            for name, compiled in list(self.compiled.items()):
                try:
                    _, seconds = timed_call(compiled, self.inputs[size], settings.device)
                except Exception as exc:  # noqa: BLE001
                    self.fail(name, f"step at inputs {size}", exc)
                    continue
                samples[name].append(seconds)
        for name in self.compiled:
            self.result.compilers[name].step_s[size] = median(samples[name])

    def memory(self) -> None:
        for name, compiled in list(self.compiled.items()):
            try:
                with self.stage():
                    peak = peak_memory_bytes(
                        compiled, self.inputs[self.largest], self.settings.device
                    )
            except Exception as exc:  # noqa: BLE001
                self.result.compilers[name].notes.append(f"memory: {describe(exc)}")
                continue
            self.result.compilers[name].peak_memory_bytes = peak

    def overhead(self) -> None:
        torch._dynamo.reset()  # the timing compile must not share Dynamo's cache entries
        for runner in self.available(skip_eager=True):
            entry = self.result.compilers[runner.name]
            try:
                with self.stage():
                    entry.outside_graph_s = outside_graph_seconds(
                        runner.compile_with,
                        self.model,
                        self.inputs[self.smallest],
                        self.settings.device,
                        self.settings.repetitions,
                    )
            except Exception as exc:  # noqa: BLE001
                entry.notes.append(f"overhead: {describe(exc)}")
            if entry.outside_graph_s is None:
                entry.notes.append("overhead: no compiled graph ran in steady state")

    def fullgraph_hits(self) -> int | None:
        compiled = self.compiled.get(FULLGRAPH)
        counters = FullgraphRunner.counters(compiled) if compiled is not None else None
        if counters is None:
            return None
        self.result.compilers[FULLGRAPH].counters = counters
        return counters.get("hits")


def run_model(case: ModelCase, runners: list[Any], settings: Settings) -> ModelResult:
    """Measure one model with every runner; never raises for a failing model or compiler."""
    run = _ModelRun(case, runners, settings)
    started = time.perf_counter()
    with torch.no_grad():
        if not run.build():
            return run.result
        run.count_graphs()
        run.cold_start()
        hits_before = run.fullgraph_hits()
        for size in run.sizes:
            run.steady_state(size)
        hits_after = run.fullgraph_hits()
        if hits_before is not None and hits_after is not None:
            run.result.compilers[FULLGRAPH].replayed = hits_after > hits_before
        run.memory()
        run.overhead()
    torch._dynamo.reset()
    run.result.duration_s = time.perf_counter() - started
    return run.result
