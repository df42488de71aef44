"""``make demo``: the loop a fullgraph user lives, on the bundled examples, in one run.

1. Breaks, exactly as ``fullgraph check`` finds them: static rules on
   ``examples/`` and a monitoring run of every example in an isolated worker.
2. ``fullgraph fix`` on a copy of ``examples/`` (``.cache/demo/examples_fixed``;
   the originals are never written): the rewrites, as a diff.
3. Graphs before and after the fix, for torch.compile (``torch._dynamo.explain``)
   and for fullgraph (one monitoring run each), in this process.
4. Speed before and after: one process times a step of every example three
   ways — eager, ``torch.compile`` and ``fullgraph.runtime.compile`` — after a
   warm-up call (whose time, compilation or monitoring run, is shown apart),
   checks that the compiled outputs equal eager, and prints one table.

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
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]  # the checkout: lsp_server/cli/demo.py


def _project_root() -> Path:
    """The checkout holding ``examples/`` (the package is installed editable from it)."""
    for candidate in (Path.cwd(), ROOT):
        if (candidate / "examples" / "__init__.py").is_file():
            return candidate.resolve()
    raise SystemExit("fullgraph demo: run it from the repository root (examples/ not found)")


# -- part 1: analysis ---------------------------------------------------------


def analyze(root: Path, entries: list[str], timeout: float) -> dict[str, int]:
    """Print static findings and runtime breaks; return graph counts per entrypoint."""
    from fullgraph.lsp_server.analysis.service import AnalysisService
    from fullgraph.lsp_server.cli import text_report
    from fullgraph.lsp_server.cli.check_run import CheckRun
    from fullgraph.lsp_server.config import Config

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


# -- part 2: fullgraph fix on a copy ------------------------------------------

FIXED_PACKAGE = "examples_fixed"


def fix_copy(root: Path) -> Path:
    """Copy ``examples/`` to ``.cache/demo/examples_fixed``, fix the copy, print the diff."""
    from fullgraph.lsp_server.cli.main import patch_text
    from fullgraph.refactors import fix_source

    print("\n== 2. fullgraph fix, applied to a copy of examples/ ==\n")
    parent = root / ".cache" / "demo"
    copy = parent / FIXED_PACKAGE
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(root / "examples", copy, ignore=shutil.ignore_patterns("__pycache__"))
    changed = 0
    for path in sorted(copy.glob("*.py")):
        source = path.read_text(encoding="utf-8")
        fixed = fix_source(source, str(path))
        if fixed != source:
            changed += 1
            path.write_text(fixed, encoding="utf-8")
            for line in patch_text(path.relative_to(root), source, fixed):
                print(line, end="")
    print(f"\n{changed} file{'s' * (changed != 1)} fixed in {copy.relative_to(root)}")
    return parent


def fixed_entry(entry: str) -> str:
    return FIXED_PACKAGE + entry.removeprefix("examples")


def _load(entry: str) -> tuple[Any, tuple, dict]:
    module_name, _, function = entry.partition(":")
    model, args, *rest = getattr(importlib.import_module(module_name), function)()
    return model, args, (rest[0] if rest else {})


# -- part 3: graphs before and after -------------------------------------------


def graph_counts(entries: list[str]) -> dict[str, tuple[int | None, int | None]]:
    """(torch.compile's graphs, fullgraph's graphs) per entrypoint, counted in this process."""
    import logging

    import torch

    import fullgraph.runtime as fr

    torch._logging.set_logs(dynamo=logging.ERROR)
    counts = {}
    for entry in entries:
        model, args, kwargs = _load(entry)
        dynamo = fullgraph = None
        with torch.no_grad(), contextlib.redirect_stdout(io.StringIO()):
            torch._dynamo.reset()
            with contextlib.suppress(Exception):
                dynamo = torch._dynamo.explain(model)(*args, **kwargs).graph_count
            with contextlib.suppress(Exception):
                fullgraph = fr.explain(model, *args, **kwargs).graph_count
        counts[entry] = (dynamo, fullgraph)
    return counts


def print_graphs(entries: list[str], counts: dict) -> None:
    print("\n== 3. Graphs per forward pass, before and after the fix ==\n")
    header = f"{'model':22} {'torch.compile':>15} {'fullgraph':>12}"
    print(header)
    print("-" * len(header))
    for entry in entries:
        cells = []
        for position in (0, 1):
            before, after = counts[entry][position], counts[fixed_entry(entry)][position]
            cells.append(
                f"{before if before is not None else '?'} -> {after if after is not None else '?'}"
            )
        print(f"{_short(entry):22} {cells[0]:>15} {cells[1]:>12}")
    print("\n1 = the whole forward pass is one graph, which Inductor compiles as a whole.")


def _short(entry: str) -> str:
    return entry.split(".", 1)[1].removesuffix(":entry")


# -- part 4: step time --------------------------------------------------------


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

    import torch

    import fullgraph.runtime as fr

    # Small models time more steadily on a fixed thread count (and on a shared
    # machine, spinning OpenMP threads make multi-threaded medians meaningless).
    torch.set_num_threads(threads)
    # torch.compile explains its own graph breaks at length; part 1 already did.
    torch._logging.set_logs(dynamo=logging.ERROR)

    rows = []
    for entry in entries:
        model, args, kwargs = _load(entry)
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


def print_table(rows: list[tuple[str, list[Timing]]], backend: str, threads: int) -> None:
    print(
        f"\n== 4. Step time, ms (median; backend {backend}; {threads} thread"
        f"{'s' * (threads != 1)}; first call in brackets: compile or monitoring run) ==\n"
    )
    header = f"{'model':22} {'code':7} {'eager':>10} {'torch.compile':>22} {'fullgraph':>22}"
    print(header)
    print("-" * len(header))
    for entry, (eager, dynamo, fullgraph) in rows:
        cells = [eager.cell()]
        for timing in (dynamo, fullgraph):
            if timing.error:
                cells.append(timing.cell())
            else:
                cells.append(f"{timing.cell()} [{timing.warmup_s:6.1f} s]")
        code = "fixed" if entry.startswith(FIXED_PACKAGE) else "as is"
        print(f"{_short(entry):22} {code:7} {cells[0]:>10} {cells[1]:>22} {cells[2]:>22}")
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
    analyze(root, entries, options.timeout)
    sys.path.insert(0, str(fix_copy(root)))
    both = [name for entry in entries for name in (entry, fixed_entry(entry))]
    print_graphs(entries, graph_counts(both))
    if not options.no_timing:
        rows = benchmark(both, options.iterations, options.backend, options.threads)
        print_table(rows, options.backend, options.threads)
    print(f"\ndemo finished in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
