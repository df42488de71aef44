"""``make demo``: fullgraph on the bundled examples, from a fresh clone, no configuration.

1. Analysis, exactly as ``fullgraph check`` does it: static rules on
   ``examples/`` and a monitoring run of every example in an isolated worker;
   prints the breaks with their locations and the graph count of each model.
2. Speed: one process times a step of every example three ways — eager,
   ``torch.compile`` and ``fullgraph.runtime.compile`` — after a warm-up call
   (compilation is reported separately), checks that the compiled outputs
   equal eager, and prints one table.

Inductor's cache goes to ``.cache/inductor`` unless TORCHINDUCTOR_CACHE_DIR is
set, so a second run skips kernel compilation.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import io
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _project_root() -> Path:
    """The checkout holding ``examples/`` (the package is installed editable from it)."""
    for candidate in (Path.cwd(), ROOT):
        if (candidate / "examples" / "__init__.py").is_file():
            return candidate.resolve()
    raise SystemExit("fullgraph demo: run it from the repository root (examples/ not found)")


# -- part 1: analysis ---------------------------------------------------------


def analyze(root: Path, entries: list[str], timeout: float) -> dict[str, int]:
    """Print static findings and runtime breaks; return graph counts per entrypoint."""
    from fullgraph.lsp_server import text_report
    from fullgraph.lsp_server.check_run import CheckRun
    from fullgraph.lsp_server.config import Config
    from fullgraph.lsp_server.service import AnalysisService

    print("== 1. Graph breaks (static rules + one monitoring run per example) ==\n")
    run = CheckRun(root=root)
    with AnalysisService(root, Config(timeout=timeout), restart_eagerly=False) as service:
        run.findings = service.check_static([root / "examples"], run.syntax_errors)
        for entry in entries:
            run.results.append(service.analyze(entry))
    for diagnostic in run.diagnostics():
        print(text_report.diagnostic_line(diagnostic, root))
        if diagnostic.origin == "runtime" and diagnostic.hint:
            print(f"    hint: {diagnostic.hint}")
    print()
    for result in run.results:
        print(text_report.result_line(result))
    print(text_report.summary_line(run))
    return {
        r.entry: (r.report or {}).get("graph_count", 0) for r in run.results if r.report is not None
    }


# -- part 2: step time --------------------------------------------------------


@dataclasses.dataclass
class Timing:
    step_ms: float | None = None
    warmup_s: float | None = None  # first call: compilation or monitoring run
    matches_eager: bool | None = None
    error: str = ""

    def cell(self) -> str:
        if self.error:
            return "failed (see below)"
        mark = "" if self.matches_eager in (None, True) else " (MISMATCH)"
        return f"{self.step_ms:8.3f}{mark}"


def _same(a: Any, b: Any) -> bool:
    import torch

    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and torch.allclose(a, b, rtol=1e-4, atol=1e-5)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def time_steps(
    fn: Callable[..., Any], args: tuple, kwargs: dict, reference: Any, iterations: int
) -> Timing:
    """Warm-up call (timed on its own), then the median of ``iterations`` steps."""
    # The examples print; keep the table readable.
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            started = time.perf_counter()
            first = fn(*args, **kwargs)
            warmup_s = time.perf_counter() - started
            for _ in range(2):
                fn(*args, **kwargs)
            samples = []
            for _ in range(iterations):
                started = time.perf_counter()
                out = fn(*args, **kwargs)
                samples.append(time.perf_counter() - started)
        except Exception as exc:  # noqa: BLE001 - one failing backend must not end the demo
            return Timing(error=f"{type(exc).__name__}: {exc}")
    matches = _same(first, reference) and _same(out, reference)
    return Timing(statistics.median(samples) * 1e3, warmup_s, matches)


def benchmark(
    entries: list[str], iterations: int, backend: str, threads: int
) -> list[tuple[str, list[Timing]]]:
    import logging

    import fullgraph.runtime as fr
    import torch

    # Small models time more steadily on a fixed thread count (and on a shared
    # machine, spinning OpenMP threads make multi-threaded medians meaningless).
    torch.set_num_threads(threads)
    # torch.compile explains its own graph breaks at length; part 1 already did.
    torch._logging.set_logs(dynamo=logging.ERROR)

    rows = []
    for entry in entries:
        module_name, _, function = entry.partition(":")
        model, args, *rest = getattr(importlib.import_module(module_name), function)()
        kwargs = rest[0] if rest else {}
        with torch.no_grad():
            with contextlib.redirect_stdout(io.StringIO()):
                reference = model(*args, **kwargs)
            timings = [time_steps(model, args, kwargs, None, iterations)]
            timings[0].matches_eager = True
            torch._dynamo.reset()
            timings.append(
                time_steps(
                    torch.compile(model, backend=backend), args, kwargs, reference, iterations
                )
            )
            if hasattr(fr, "compile"):
                compiled = fr.compile(model, backend=backend)
                timings.append(time_steps(compiled, args, kwargs, reference, iterations))
            else:
                timings.append(Timing(error="fullgraph.runtime.compile not available"))
        rows.append((entry, timings))
        print(f"  timed {entry}", file=sys.stderr)
    return rows


def print_table(
    rows: list[tuple[str, list[Timing]]], graphs: dict[str, int], backend: str, threads: int
) -> None:
    print(
        f"\n== 2. Step time, ms (median; backend {backend}; {threads} thread"
        f"{'s' * (threads != 1)}; first call in brackets: compile or monitoring run) ==\n"
    )
    header = f"{'model':34} {'graphs':>6} {'eager':>10} {'torch.compile':>22} {'fullgraph':>22}"
    print(header)
    print("-" * len(header))
    for entry, (eager, dynamo, fullgraph) in rows:
        cells = [eager.cell()]
        for timing in (dynamo, fullgraph):
            if timing.error:
                cells.append(timing.cell())
            else:
                cells.append(f"{timing.cell()} [{timing.warmup_s:6.1f} s]")
        name = entry.removeprefix("examples.").removesuffix(":entry")
        count = graphs.get(entry, "?")
        print(f"{name:34} {count!s:>6} {cells[0]:>10} {cells[1]:>22} {cells[2]:>22}")
    print(
        "\ngraphs: operator graphs fullgraph captured in one monitoring run "
        "(1 = the whole forward pass)."
    )
    for entry, timings in rows:
        for name, timing in zip(("eager", "torch.compile", "fullgraph"), timings):
            if timing.error:
                print(f"{name} failed on {entry}: {timing.error}")
            elif timing.matches_eager is False:
                print(f"{name} on {entry}: outputs differ from eager")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fullgraph.lsp_server.demo")
    parser.add_argument("--entry", action="append", help="only these entrypoints")
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument(
        "--backend", choices=("inductor", "eager"), help="default: [tool.fullgraph] backend"
    )
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument("--no-timing", action="store_true", help="analysis only")
    options = parser.parse_args(argv)

    root = _project_root()
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(root / ".cache" / "inductor"))
    # Compile in-process: a pool of compiler subprocesses warming up in the
    # background would steal the CPU the timings measure.
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    os.chdir(root)
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    from examples import ENTRYPOINTS

    entries = options.entry or ENTRYPOINTS
    if options.backend is None:
        from fullgraph.lsp_server.config import load_config

        options.backend = load_config(root).backend
    started = time.monotonic()
    graphs = analyze(root, entries, options.timeout)
    if not options.no_timing:
        rows = benchmark(entries, options.iterations, options.backend, options.threads)
        print_table(rows, graphs, options.backend, options.threads)
    print(f"\ndemo finished in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
