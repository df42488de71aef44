"""User code that hangs, aborts, floods stdout or exits costs its own entrypoint only.

One ``fullgraph check`` run analyzes all the misbehaving entrypoints of
``projects/isolation`` in order; each gets its own result and the run still
ends with a complete JSON document (user prints never reach our stdout).
"""

from __future__ import annotations

import json

from cli_helpers import ISOLATION, json_output, line_of, run_cli

ENTRIES = [
    "pkg.entries:sleeps_forever",
    "pkg.entries:aborts",
    "pkg.entries:prints_megabytes",
    "pkg.entries:exits",
    "pkg.entries:raises",
]


def test_each_failure_is_isolated_and_reported():
    args = ["check", "--no-static", "--json", "--timeout", "5"]
    for entry in ENTRIES:
        args += ["--entry", entry]
    completed = run_cli(*args, cwd=ISOLATION, timeout=400)

    assert completed.returncode == 1, completed.stderr
    document = json_output(completed)
    results = {r["entry"]: r for r in document["entrypoints"]}
    assert list(results) == ENTRIES
    statuses = {entry: results[entry]["status"] for entry in ENTRIES}
    assert statuses == {
        "pkg.entries:sleeps_forever": "timeout",
        "pkg.entries:aborts": "crashed",
        "pkg.entries:prints_megabytes": "user_exception",
        "pkg.entries:exits": "user_exception",
        "pkg.entries:raises": "user_exception",
    }
    # The sleeper was stopped at its limit (its duration also counts the
    # worker's start-up, slow on a loaded machine), not waited for.
    assert 5 <= results["pkg.entries:sleeps_forever"]["duration_s"] < 150

    aborted = results["pkg.entries:aborts"]
    assert "SIGABRT" in aborted["error"]["message"]
    assert "about to abort" in aborted["stdout"]

    flood = results["pkg.entries:prints_megabytes"]
    # 8 MiB were printed; the result keeps a bounded head and tail.
    assert flood["stdout"].startswith("x" * 1023)
    assert "bytes of output omitted" in flood["stdout"]
    assert len(flood["stdout"]) < 1024 * 1024
    assert "done printing" in flood["stderr"]
    # Not on the CLI's own stdout: there it exists only JSON-escaped, inside the result.
    assert "x" * 1023 + "\n" not in completed.stdout

    exited = results["pkg.entries:exits"]
    assert exited["error"]["type"] == "SystemExit"
    assert "sys.exit(3)" in exited["error"]["message"]

    raised = results["pkg.entries:raises"]["error"]
    assert raised["type"] == "ValueError"
    assert raised["message"] == "cannot build the sample batch"
    raise_line, _ = line_of(ISOLATION / "pkg" / "entries.py", 'raise ValueError("cannot build')
    # The traceback starts in user code (no worker frames) and points at the raise.
    assert raised["traceback"].splitlines()[1].lstrip().startswith('File "')
    assert "entries.py" in raised["traceback"].splitlines()[1]
    assert f"line {raise_line}, in _build_model" in raised["traceback"]
    assert "lsp_server" not in raised["traceback"]
    assert document["summary"]["failed"] == 5


def test_text_output_names_each_failure():
    completed = run_cli(
        "check",
        "--no-static",
        "--entry",
        "pkg.entries:raises",
        "--entry",
        "pkg.entries:exits",
        cwd=ISOLATION,
        timeout=120,
    )
    assert completed.returncode == 1
    lines = completed.stdout.splitlines()
    assert "pkg.entries:raises: user_exception: cannot build the sample batch" in lines
    assert "pkg.entries:exits: user_exception: sys.exit(3) was called" in lines
    assert lines[-1].endswith(".") and "2 failed" in lines[-1]
    # The user's traceback is shown on stderr.
    assert "ValueError: cannot build the sample batch" in completed.stderr


def test_sarif_marks_a_failed_entrypoint_as_unsuccessful_execution():
    completed = run_cli(
        "check",
        "--no-static",
        "--sarif",
        "--entry",
        "pkg.entries:raises",
        cwd=ISOLATION,
        timeout=120,
    )
    assert completed.returncode == 1
    invocation = json.loads(completed.stdout)["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    (notification,) = invocation["toolExecutionNotifications"]
    assert notification["level"] == "error"
    assert notification["properties"] == {"entry": "pkg.entries:raises", "status": "user_exception"}
    assert "cannot build the sample batch" in notification["message"]["text"]
