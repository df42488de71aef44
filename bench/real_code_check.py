"""``fullgraph check``'s static rules over every transformers modeling file (issue 18).

Lints each ``transformers/models/*/modeling_*.py`` in this process (what
``fullgraph check`` runs per file), counts internal errors (a rule that raised,
logged by the engine, or a lint that raised), the time per 1,000 lines, and the
findings by code and severity; then draws a seeded random sample of the findings
``fullgraph check`` shows (not hints) for review, each printed with its source
line.

    .venv/bin/python bench/real_code_check.py [--sample 60] [--seed 18] [--json OUT.json] [--limit N]

The review of a sample is written up in docs/refactors.md.  Not a test.
"""

from __future__ import annotations

import argparse
import collections
import json
import logging
import pathlib
import random
import sys
import time


class _Errors(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record.getMessage())


def modeling_files() -> list[pathlib.Path]:
    import transformers

    root = pathlib.Path(transformers.__file__).parent / "models"
    return sorted(root.glob("*/modeling_*.py"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=60)
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--limit", type=int, default=0, help="only the first N files")
    parser.add_argument("--json", type=pathlib.Path, default=None, help="write every finding")
    options = parser.parse_args(argv)

    from fullgraph.refactors import SourceSyntaxError, lint_source

    errors = _Errors()
    logging.getLogger("fullgraph").addHandler(errors)
    files = modeling_files()
    if options.limit:
        files = files[: options.limit]
    lines = 0
    crashed: list[str] = []
    shown: list[dict] = []
    counts: collections.Counter = collections.Counter()
    start, cpu = time.perf_counter(), time.process_time()
    slowest = (0.0, "")
    for path in files:
        source = path.read_text(encoding="utf-8")
        lines += source.count("\n")
        began = time.perf_counter()
        try:
            findings = lint_source(source, str(path))
        except SourceSyntaxError as error:
            crashed.append(f"{path}: syntax error {error}")
            continue
        except Exception as error:  # noqa: BLE001 - an internal error is what is counted
            crashed.append(f"{path}: {type(error).__name__}: {error}")
            continue
        took = time.perf_counter() - began
        slowest = max(slowest, (took, f"{path.name} ({source.count(chr(10))} lines)"))
        text_lines = source.splitlines()
        for finding in findings:
            counts[(finding.code, finding.severity)] += 1
            if finding.severity != "hint":
                shown.append(
                    {
                        "path": str(path.relative_to(path.parents[2])),
                        "line": finding.line,
                        "code": finding.code,
                        "severity": finding.severity,
                        "fix": finding.fix is not None,
                        "message": finding.message,
                        "refusal": finding.refusal_reason,
                        "source": text_lines[finding.line - 1].strip(),
                    }
                )
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    summary = {
        "files": len(files),
        "lines": lines,
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "s_per_1k_lines": round(wall / lines * 1000, 3),
        "slowest_file": f"{slowest[1]}: {slowest[0]:.2f} s",
        "internal_errors": len(errors.records) + len(crashed),
        "crashed": crashed[:20],
        "rule_errors": errors.records[:20],
        "findings": {f"{code} {severity}": n for (code, severity), n in sorted(counts.items())},
        "shown_by_check": len(shown),
    }
    print(json.dumps(summary, indent=1))
    if options.json is not None:
        options.json.write_text(json.dumps({"summary": summary, "findings": shown}, indent=1))
    sample = random.Random(options.seed).sample(shown, min(options.sample, len(shown)))
    for number, finding in enumerate(sample, 1):
        fix = "fix" if finding["fix"] else f"no fix ({finding['refusal']})"
        print(
            f"\n[{number}] {finding['path']}:{finding['line']} {finding['code']} {fix}\n"
            f"    {finding['source']}\n    {finding['message']}"
        )
    return 1 if summary["internal_errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
