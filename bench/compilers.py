"""The three ways the benchmark runs a model: eager, ``torch.compile`` and fullgraph.

Each adapter turns a model into a callable, counts graphs and breaks with its
own explain tool, and can compile with a caller-supplied backend (used to time
what happens outside the compiled graphs).  fullgraph's runtime is looked up
at call time, so the harness works, with "not available" columns, before the
runtime exists.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from typing import Any

import torch

from bench.zoo import ModelInputs

EAGER = "eager"
TORCH_COMPILE = "torch.compile"
FULLGRAPH = "fullgraph"

Backend = Callable[[torch.fx.GraphModule, list[Any]], Callable[..., Any]]


@dataclasses.dataclass
class GraphStats:
    """Graphs a compiler captured and its breaks, counted by distinct source location."""

    graphs: int
    breaks: int
    break_sites: list[str]


class EagerRunner:
    name = EAGER

    def unavailable_reason(self) -> str | None:
        return None

    def compile(self, model: Callable[..., Any]) -> Callable[..., Any]:
        return model


class TorchCompileRunner:
    """``torch.compile`` with static shapes: one specialized graph per batch size, as fullgraph."""

    name = TORCH_COMPILE

    def __init__(self, backend: str) -> None:
        self.backend = backend

    def unavailable_reason(self) -> str | None:
        return None

    def compile(self, model: Callable[..., Any]) -> Callable[..., Any]:
        return self.compile_with(model, self.backend)

    def compile_with(self, model: Callable[..., Any], backend: str | Backend) -> Callable[..., Any]:
        return torch.compile(model, backend=backend, dynamic=False)

    def graph_stats(self, model: Callable[..., Any], inputs: ModelInputs) -> GraphStats:
        torch._dynamo.reset()
        try:
            explained = torch._dynamo.explain(model)(*inputs.args, **inputs.kwargs)
        finally:
            torch._dynamo.reset()
        sites = []
        for reason in explained.break_reasons:
            # Nested frames report one break once per frame: count the innermost user frame.
            frame = reason.user_stack[-1] if reason.user_stack else None
            where = f"{frame.filename}:{frame.lineno}" if frame else "<unknown>"
            site = f"{where} {reason.reason.splitlines()[0] if reason.reason else ''}".strip()
            if site not in sites:
                sites.append(site)
        return GraphStats(explained.graph_count, len(sites), sites)


class FullgraphRunner:
    """``fullgraph.runtime.compile``; backends other than its own names go in as callables."""

    name = FULLGRAPH
    NATIVE_BACKENDS = ("inductor", "eager")

    def __init__(self, backend: str) -> None:
        self.backend = backend

    @staticmethod
    def _runtime() -> Any:
        return importlib.import_module("fullgraph.runtime")

    def unavailable_reason(self) -> str | None:
        try:
            runtime = self._runtime()
        except Exception as exc:  # noqa: BLE001 (a half-written runtime is still absent)
            return f"fullgraph.runtime does not import: {type(exc).__name__}: {exc}"
        if not hasattr(runtime, "compile"):
            return "fullgraph.runtime.compile is not available"
        return None

    def compile(self, model: Callable[..., Any]) -> Callable[..., Any]:
        if self.backend in self.NATIVE_BACKENDS:
            return self.compile_with(model, self.backend)
        return self.compile_with(model, torch._dynamo.lookup_backend(self.backend))

    def compile_with(self, model: Callable[..., Any], backend: str | Backend) -> Callable[..., Any]:
        return self._runtime().compile(model, backend=backend)

    def graph_stats(self, model: Callable[..., Any], inputs: ModelInputs) -> GraphStats | None:
        runtime = self._runtime()
        if not hasattr(runtime, "explain"):
            return None
        report = runtime.explain(model, *inputs.args, **inputs.kwargs).to_json()
        sites = []
        for brk in report.get("breaks", []):
            site = f"{brk.get('file')}:{brk.get('line')} {brk.get('code')} {brk.get('function')}"
            if site not in sites:
                sites.append(site)
        return GraphStats(report["graph_count"], report["break_count"], sites)

    @staticmethod
    def counters(compiled: Any) -> dict[str, Any] | None:
        """The compiled object's hit/miss counters, which prove the replay path ran."""
        stats = getattr(compiled, "stats", None)
        if stats is None:
            return None
        if dataclasses.is_dataclass(stats):
            return dataclasses.asdict(stats)
        return {k: v for k, v in vars(stats).items() if not k.startswith("_")}


def make_runners(backend: str) -> list[Any]:
    return [EagerRunner(), TorchCompileRunner(backend), FullgraphRunner(backend)]
