"""How the whole-file static lint and fix scale with the size of the file (issue 18).

Builds files of about 1,000, 3,000, 10,000 and 20,000 lines by concatenating
real model code (transformers' ``modeling_*.py`` files, in a fixed order, cut
at a top-level statement), then times ``lint_source`` (what ``fullgraph
check`` runs per file) and ``fix_source`` (``fullgraph fix``) once per size,
in this process, after a warm-up lint.  Reports seconds and seconds per 1,000
lines, and whether the targets hold:

- first lint of 3,000 lines ≤ 2 s;
- 20,000 lines ≤ 15 s for check and for fix;
- time per 1,000 lines flat within 2x from 1,000 to 20,000 lines.

    .venv/bin/python bench/lint_scale.py [--sizes 1000,3000,10000,20000] [--json] [--profile SIZE]

``--profile SIZE`` runs cProfile on the check of that size and prints the top
entries by cumulative time.  Not a test: timing on a shared machine is noisy.
Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import pathlib
import sys
import time

# Real modeling files written by different hands; concatenated in this order, cycled.
MODELS = (
    "bert", "gpt2", "t5", "llama", "vit", "bart", "roberta", "whisper", "clip", "mistral",
    "deberta", "swin", "wav2vec2", "opt", "bloom", "falcon", "gpt_neo", "electra",
)  # fmt: skip


def transformers_models() -> pathlib.Path:
    import transformers

    return pathlib.Path(transformers.__file__).parent / "models"


def real_files() -> list[str]:
    root = transformers_models()
    texts = []
    for name in MODELS:
        path = root / name / f"modeling_{name}.py"
        if path.exists():
            texts.append(path.read_text(encoding="utf-8"))
    if not texts:
        raise SystemExit("no transformers modeling files found")
    return texts


def build(lines: int, texts: list[str]) -> str:
    """About ``lines`` lines of concatenated real files, cut before a top-level statement."""
    parts, count, index = [], 0, 0
    while count < lines:
        text = texts[index % len(texts)]
        if not text.endswith("\n"):
            text += "\n"
        parts.append(text)
        count += text.count("\n")
        index += 1
    source = "".join(parts)
    starts = [node.lineno for node in ast.parse(source).body]
    for node in ast.parse(source).body:
        if getattr(node, "decorator_list", None):
            starts[starts.index(node.lineno)] = node.decorator_list[0].lineno
    cut = max(start for start in starts if start <= lines + 1)
    return "".join(source.splitlines(keepends=True)[: cut - 1])


def changed_lines(before: str, after: str) -> int:
    """Lines the fix removed or added (a line-by-line comparison would count every line
    below an added import)."""
    diff = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
    return sum(1 for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---")))


def measure(source: str, action) -> tuple[float, float, object]:
    """Wall-clock and CPU seconds of ``action(source)`` (CPU time is less hit by a busy machine)."""
    start, cpu = time.perf_counter(), time.process_time()
    result = action(source)
    return time.perf_counter() - start, time.process_time() - cpu, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,3000,10000,20000")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--no-fix", action="store_true", help="time check only")
    parser.add_argument("--profile", type=int, default=0, help="profile the check of this size")
    options = parser.parse_args(argv)

    from fullgraph.refactors import fix_source, lint_source

    texts = real_files()
    lint_source(build(200, texts), "warm.py")  # imports, rule tables
    if options.profile:
        import cProfile
        import pstats

        source = build(options.profile, texts)
        profiler = cProfile.Profile()
        profiler.enable()
        lint_source(source, "profiled.py")
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)
        return 0
    rows = []
    for size in (int(s) for s in options.sizes.split(",")):
        source = build(size, texts)
        lines = source.count("\n")
        check_s, check_cpu, findings = measure(source, lambda s: lint_source(s, "scale.py"))
        row = {"lines": lines, "findings": len(findings), "check_s": round(check_s, 2)}
        row["check_cpu_s"] = round(check_cpu, 2)
        row["check_s_per_1k"] = round(check_s / lines * 1000, 3)
        if not options.no_fix:
            fix_s, fix_cpu, fixed = measure(source, lambda s: fix_source(s, "scale.py"))
            row["fix_s"] = round(fix_s, 2)
            row["fix_cpu_s"] = round(fix_cpu, 2)
            row["fix_s_per_1k"] = round(fix_s / lines * 1000, 3)
            row["fix_changed_lines"] = changed_lines(source, fixed)
        rows.append(row)
        if not options.json:
            print(json.dumps(row), flush=True)
    failures = []
    for row in rows:
        if 2500 <= row["lines"] <= 3500 and row["check_s"] > 2:
            failures.append(f"first lint of {row['lines']} lines took {row['check_s']} s (> 2 s)")
        if row["lines"] >= 19000:
            for key in ("check_s", "fix_s"):
                if key in row and row[key] > 15:
                    failures.append(f"{key} of {row['lines']} lines is {row[key]} s (> 15 s)")
    for key in ("check_s_per_1k", "fix_s_per_1k"):
        values = [row[key] for row in rows if key in row]
        if values and max(values) > 2 * min(values):
            failures.append(f"{key} not flat within 2x: {values}")
    if options.json:
        print(json.dumps({"rows": rows, "failures": failures}))
    else:
        print("targets met" if not failures else "MISSED: " + "; ".join(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
