"""Benchmark fullgraph against eager and torch.compile; write docs/benchmarks.md and .png.

    python bench/run.py                    # the full suite (make bench), on CPU
    python bench/run.py --device cuda      # the same on a GPU (Triton kernels)
    python bench/run.py --tiny --backend eager --out-dir /tmp/b   # a smoke run (make test)

Every model runs in this one process through eager, ``torch.compile`` and
``fullgraph.runtime.compile``; a model or compiler that fails is recorded as
failed and the run goes on.  Models are measured in order of importance:
the ``transformers`` architectures, the examples, then the corpus programs
(those with expected graph breaks first); corpus programs left when the time
budget is spent are listed as skipped.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# Run as a script, this file's folder would head sys.path and its modules could
# shadow installed ones (bench/coverage.py vs coverage); the repository root goes
# there instead, so `bench` and `examples` import as packages.
REPO_ROOT = Path(__file__).resolve().parent.parent
if __package__ in (None, ""):
    sys.path[0] = str(REPO_ROOT)

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch

from bench import environment, plot, report, targets
from bench.compilers import make_runners
from bench.local_models import corpus_cases, example_cases
from bench.suite import OK, SKIPPED, CompilerResult, ModelResult, Settings, run_model
from bench.zoo import TINY_CASE, TRANSFORMERS_CASES, ModelCase

GROUPS = ("transformers", "examples", "programs")
LAST_RUN = REPO_ROOT / ".cache" / "bench" / "last-run.json"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="cpu or cuda[:N] (default cpu)")
    parser.add_argument(
        "--backend",
        default=None,
        help="backend for both compilers: inductor (default), eager, or a torch.compile "
        "backend name such as aot_eager (default eager with --tiny)",
    )
    parser.add_argument("--tiny", action="store_true", help="one small model, few iterations")
    parser.add_argument(
        "--groups", default=",".join(GROUPS), help="comma-separated: " + ", ".join(GROUPS)
    )
    parser.add_argument("--models", nargs="*", default=None, help="only these model names")
    parser.add_argument(
        "--out-dir", type=Path, default=None, help="where benchmarks.md/.png go (default docs/)"
    )
    parser.add_argument(
        "--json",
        type=Path,
        default=None,
        help="write every measurement as JSON here (default .cache/bench/last-run.json, "
        "none with --tiny)",
    )
    parser.add_argument(
        "--from-json",
        type=Path,
        nargs="+",
        default=None,
        help="re-render runs saved as JSON (several: their models in order), no measuring",
    )
    parser.add_argument(
        "--repetitions", type=int, default=None, help="timed calls per size (default 30)"
    )
    parser.add_argument(
        "--warmup", type=int, default=None, help="warm-up calls per size (default 3)"
    )
    parser.add_argument("--batch-sizes", default=None, help="comma-separated (default 1,8)")
    parser.add_argument(
        "--budget-minutes",
        type=float,
        default=20.0,
        help="stop starting corpus programs after this",
    )
    parser.add_argument(
        "--stage-timeout",
        type=float,
        default=300.0,
        help="seconds one build/compile/measure stage may take",
    )
    parser.add_argument(
        "--threads", type=int, default=None, help="torch CPU threads (default: torch's)"
    )
    args = parser.parse_args(argv)
    if args.tiny:
        args.backend = args.backend or "eager"
        args.repetitions = args.repetitions or 5
        args.warmup = args.warmup or 1
        args.batch_sizes = args.batch_sizes or "1,4"
        if args.out_dir is None:
            parser.error("--tiny needs --out-dir (it must not overwrite docs/benchmarks.md)")
    args.backend = args.backend or "inductor"
    args.repetitions = args.repetitions or 30
    args.warmup = args.warmup or 3
    args.batch_sizes = tuple(int(b) for b in (args.batch_sizes or "1,8").split(","))
    args.out_dir = args.out_dir or REPO_ROOT / "docs"
    return args


def select_cases(args: argparse.Namespace) -> list[tuple[ModelCase, bool]]:
    """The cases to run, each with whether the time budget may skip it."""
    if args.tiny:
        return [(TINY_CASE, False)]
    groups = set(args.groups.split(","))
    cases: list[tuple[ModelCase, bool]] = []
    if "transformers" in groups:
        cases += [(case, False) for case in TRANSFORMERS_CASES]
    if "examples" in groups:
        cases += [(case, False) for case in example_cases()]
    if "programs" in groups:
        cases += [(case, True) for case in corpus_cases()]
    if args.models:
        wanted = set(args.models)
        cases = [(case, optional) for case, optional in cases if case.name in wanted]
        cases += [(TINY_CASE, False)] if TINY_CASE.name in wanted else []
    return cases


def _summary(result: ModelResult) -> str:
    if result.status != OK:
        return f"{result.status}: {result.error}"
    parts = []
    for name in ("torch.compile", "fullgraph"):
        speedup = plot.speedups(result, name)
        entry = result.compilers.get(name)
        parts.append(
            f"{name} {speedup:.2f}×" if speedup else f"{name} {entry.status if entry else 'n/a'}"
        )
    return ", ".join(parts)


def run_cases(
    cases: list[tuple[ModelCase, bool]], settings: Settings, backend: str, budget_s: float
) -> list[ModelResult]:
    started = time.monotonic()
    results = []
    for index, (case, optional) in enumerate(cases, 1):
        if optional and time.monotonic() - started > budget_s:
            skipped = ModelResult(case.name, case.origin, SKIPPED, "time budget spent")
            results.append(skipped)
            continue
        print(f"[{index}/{len(cases)}] {case.name} ...", file=sys.stderr, flush=True)
        # Programs under test print; their output would bury the progress lines.
        with contextlib.redirect_stdout(io.StringIO()):
            result = run_model(case, make_runners(backend), settings)
        print(
            f"    {result.duration_s or 0:.0f} s: {_summary(result)}", file=sys.stderr, flush=True
        )
        results.append(result)
    return results


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Run the selected models; return the run as the JSON-ready payload."""
    # Re-initialising the thread pools up front: on some MKL builds the first few
    # hundred small matrix products otherwise take milliseconds each, which would
    # inflate eager's batch-1 times and flatter both compilers.
    torch.set_num_threads(args.threads or torch.get_num_threads())
    settings = Settings(
        device=args.device,
        batch_sizes=args.batch_sizes,
        repetitions=args.repetitions,
        warmup=args.warmup,
        stage_timeout_s=args.stage_timeout,
    )
    # Described before measuring: the commit and date are those of the code measured.
    env = environment.describe_environment(args.device, args.backend)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="fullgraph-bench-") as cache_root:
        settings = dataclasses.replace(settings, cache_root=cache_root)
        results = run_cases(select_cases(args), settings, args.backend, args.budget_minutes * 60)
    settings_info = dataclasses.asdict(dataclasses.replace(settings, cache_root=None))
    settings_info["duration_s"] = time.monotonic() - started
    return {
        "environment": env,
        "settings": settings_info,
        "models": [dataclasses.asdict(r) for r in results],
    }


def load_results(payload: dict[str, Any]) -> list[ModelResult]:
    results = []
    for model in payload["models"]:
        fields = {key: value for key, value in model.items() if key != "compilers"}
        compilers = {name: CompilerResult(**entry) for name, entry in model["compilers"].items()}
        results.append(ModelResult(**fields, compilers=compilers))
    return results


def merge_runs(payloads: list[dict[str, Any]]) -> dict[str, Any]:
    """One run out of several made on one machine (say, the corpus measured separately)."""
    first = payloads[0]
    settings = {
        **first["settings"],
        "duration_s": sum(p["settings"].get("duration_s", 0.0) for p in payloads),
    }
    # A model measured again (say, one the first run skipped) takes its earlier place.
    models: dict[str, dict[str, Any]] = {}
    for payload in payloads:
        for model in payload["models"]:
            if model["status"] != SKIPPED or model["name"] not in models:
                models[model["name"]] = model
    return {**first, "settings": settings, "models": list(models.values())}


def publish(payload: dict[str, Any], out_dir: Path, json_path: Path | None) -> None:
    """Write benchmarks.md, benchmarks.png and (optionally) the JSON of a run."""
    results = load_results(payload)
    verdicts = targets.evaluate(results)
    env, settings_info = payload["environment"], payload["settings"]
    out_dir.mkdir(parents=True, exist_ok=True)
    plot_path = out_dir / "benchmarks.png"
    try:
        plot.draw([r for r in results if r.status != SKIPPED], plot_path, env["device"])
        plot_name: str | None = plot_path.name
    except ImportError as exc:  # matplotlib is in the bench extra
        print(f"no plot: {exc}", file=sys.stderr)
        plot_name = None
    markdown = report.render(results, verdicts, env, settings_info, plot_name)
    (out_dir / "benchmarks.md").write_text(markdown)
    if json_path:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        payload = {**payload, "targets": [dataclasses.asdict(v) for v in verdicts]}
        json_path.write_text(json.dumps(payload, indent=1, default=str))
    print(f"wrote {out_dir / 'benchmarks.md'}", file=sys.stderr)
    for verdict in verdicts:
        print(f"  {verdict.status:>6}  {verdict.target}: {verdict.detail}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.from_json:
        # Re-render a measured run (after editing bench/NOTES.md, say) without re-measuring.
        publish(
            merge_runs([json.loads(p.read_text()) for p in args.from_json]), args.out_dir, args.json
        )
        return 0
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("--device cuda: no CUDA device is available", file=sys.stderr)
        return 2
    # A tiny run must not replace the saved real run.
    publish(measure(args), args.out_dir, args.json or (None if args.tiny else LAST_RUN))
    return 0


if __name__ == "__main__":
    sys.exit(main())
