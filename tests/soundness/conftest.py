"""Soundness suite: record each case's outcome and print a per-class table at the end.

Each test calls ``harness.run_case``; its :class:`harness.CaseResult` is attached
to the test's report (``user_properties``, which xdist carries to the
controller), and ``pytest_terminal_summary`` prints, per class (the test file):
test cases, passed, xfailed (known runtime bugs), failed, and among the failing
ones how many were wrong results, internal errors or missed replays, plus the
replay rate (compiled calls that were replays / compiled calls).

The table appears when the suite is run as ``pytest tests/soundness`` (or
``make soundness``): this conftest must be loaded by the process that
prints the summary.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import harness
import pytest

_CACHE = Path(__file__).resolve().parents[2] / ".cache"
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(_CACHE / "inductor"))
# hypothesis writes failing-example patches: keep them out of the working tree
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", str(_CACHE / "hypothesis"))

_TESTS: dict[str, dict] = {}


def _klass(nodeid: str) -> str:
    name = nodeid.split("::", 1)[0].rsplit("/", 1)[-1]
    name = name.removeprefix("test_").removesuffix(".py")
    return name


@pytest.fixture(autouse=True)
def _soundness_results(request):
    start = len(harness.RESULTS)
    yield
    for result in harness.RESULTS[start:]:
        request.node.user_properties.append(("soundness", dataclasses.asdict(result)))


def pytest_runtest_logreport(report):
    entry = _TESTS.setdefault(report.nodeid, {"status": None, "results": []})
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        if hasattr(report, "wasxfail"):
            entry["status"] = "xpassed" if report.outcome == "passed" else "xfailed"
        else:
            entry["status"] = report.outcome
    if report.when == "teardown":  # the fixture attaches the results during teardown
        entry["results"].extend(v for k, v in report.user_properties if k == "soundness")


def pytest_terminal_summary(terminalreporter):
    rows: dict[str, dict] = {}
    for nodeid, entry in _TESTS.items():
        if entry["status"] is None or not entry["results"]:
            continue
        if _klass(nodeid).startswith("00"):
            continue  # the harness's self-test plants wrong twins on purpose
        row = rows.setdefault(
            _klass(nodeid),
            {
                "cases": 0,
                "passed": 0,
                "xfailed": 0,
                "xpassed": 0,
                "failed": 0,
                "wrong": 0,
                "internal": 0,
                "noreplay": 0,
                "hits": 0,
                "calls": 0,
                "examples": 0,
            },
        )
        row["cases"] += 1
        status = entry["status"]
        row[status if status in ("passed", "xfailed", "xpassed") else "failed"] += 1
        for result in entry["results"]:
            row["examples"] += 1
            row["hits"] += result["hits"]
            row["calls"] += result["calls"]
            outcome = result["outcome"]
            if outcome == "wrong":
                row["wrong"] += 1
            elif outcome == "internal":
                row["internal"] += 1
            elif outcome == "no-replay":
                row["noreplay"] += 1
    if not rows:
        return
    write = terminalreporter.write_line
    terminalreporter.section("fullgraph soundness")
    header = (
        f"{'class':<22}{'cases':>6}{'pass':>6}{'xfail':>6}{'xpass':>6}{'fail':>6}"
        f"{'wrong':>7}{'intern':>7}{'norepl':>7}{'replays/calls':>16}"
    )
    write(header)
    total = dict.fromkeys(next(iter(rows.values())), 0)
    for name in sorted(rows):
        row = rows[name]
        for key in total:
            total[key] += row[key]
        write(_line(name, row))
    write(_line("total", total))
    if "generated" in rows:
        write(f"generated: {rows['generated']['examples']} examples")
    write(
        "wrong/intern/norepl count case runs (a hypothesis test runs many) whose first "
        "difference was a wrong result, an internal error or a missed replay."
    )


def _line(name: str, row: dict) -> str:
    rate = f"{row['hits']}/{row['calls']}"
    if row["calls"]:
        rate += f" ({100 * row['hits'] / row['calls']:.0f}%)"
    return (
        f"{name:<22}{row['cases']:>6}{row['passed']:>6}{row['xfailed']:>6}{row['xpassed']:>6}{row['failed']:>6}"
        f"{row['wrong']:>7}{row['internal']:>7}{row['noreplay']:>7}{rate:>16}"
    )
