"""Bad configuration: every error names the key, the value and what was expected.

Exit code 2 for each, from the CLI in a subprocess; the structured config
loader is also tested directly because the language server uses it too.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import ISOLATION, json_output, run_cli

from fullgraph.lsp_server.config import Config, load_config
from fullgraph.lsp_server.errors import ConfigError


def write_project(root: Path, table: str) -> Path:
    (root / "pyproject.toml").write_text(f"[tool.fullgraph]\n{table}\n")
    return root


def test_malformed_entry_on_the_command_line(tmp_path):
    completed = run_cli("check", "--entry", "models.mlp", cwd=write_project(tmp_path, ""))
    assert completed.returncode == 2
    assert "--entry = 'models.mlp': expected \"package.module:function\"" in completed.stderr


def test_malformed_entry_in_pyproject(tmp_path):
    project = write_project(tmp_path, 'entrypoints = ["ok.module:fn", "not valid"]')
    completed = run_cli("check", cwd=project)
    assert completed.returncode == 2
    assert "tool.fullgraph.entrypoints[1] = 'not valid'" in completed.stderr
    assert str(project / "pyproject.toml") in completed.stderr


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('timeout = "soon"', "tool.fullgraph.timeout = 'soon': expected a positive number"),
        ("timeout = -1", "tool.fullgraph.timeout = -1: expected a positive number"),
        (
            'entrypoints = "examples.m:entry"',
            (
                "tool.fullgraph.entrypoints = 'examples.m:entry': "
                'expected a list of "package.module:function" strings'
            ),
        ),
        ('backend = "xla"', "tool.fullgraph.backend = 'xla': expected one of 'inductor', 'eager'"),
        ("memory_mb = 1.5", "tool.fullgraph.memory_mb = 1.5: expected a non-negative integer"),
        (
            '[tool.fullgraph.diagnostics]\nstatic = "no"',
            "tool.fullgraph.diagnostics.static = 'no': expected true or false",
        ),
        ("debounce_ms = -5", "tool.fullgraph.debounce_ms = -5: expected a non-negative whole"),
    ],
)
def test_bad_values_in_pyproject(tmp_path, table, message):
    with pytest.raises(ConfigError) as caught:
        load_config(write_project(tmp_path, table))
    assert message in str(caught.value)
    assert caught.value.key.startswith("tool.fullgraph.")


def test_an_unknown_key_is_a_warning_naming_it_and_the_known_keys(tmp_path):
    project = write_project(tmp_path, 'timout = 3\nentrypoints = ["oops"]')
    # The bad entrypoint still stops the run: only the unknown key is tolerated.
    completed = run_cli("check", "--no-progress", cwd=project)
    assert completed.returncode == 2
    assert "tool.fullgraph.entrypoints[0] = 'oops'" in completed.stderr
    write_project(tmp_path, "timout = 3")
    completed = run_cli("check", "--no-progress", cwd=project)
    assert completed.returncode == 0, completed.stderr  # the warning does not change the exit
    (warning,) = [line for line in completed.stderr.splitlines() if "timout" in line]
    assert warning.startswith("fullgraph: warning: ")
    assert "unknown setting `timout` ignored" in warning
    assert "known settings: entrypoints, timeout, memory_mb" in warning
    assert completed.stdout.strip().endswith("checked.")  # the run went ahead


@pytest.mark.parametrize(
    "table",
    [
        'ignore = ["FG104"]\nrun_on_save = false\ndebounce_ms = 50',
        'runOnSave = false\nbreak-severity = "error"\ncompiled_dir = "out"',
        "[tool.fullgraph.diagnostics]\nstatic = true\nruntime = false",
    ],
)
def test_settings_the_server_reads_are_accepted_by_the_cli(tmp_path, table):
    completed = run_cli("check", "--no-progress", cwd=write_project(tmp_path, table))
    assert completed.returncode == 0, completed.stderr
    assert "warning" not in completed.stderr and "error" not in completed.stderr


def test_bad_value_exits_2_from_the_cli(tmp_path):
    completed = run_cli("check", cwd=write_project(tmp_path, 'timeout = "soon"'))
    assert completed.returncode == 2
    assert "tool.fullgraph.timeout = 'soon'" in completed.stderr


def test_broken_toml(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.fullgraph\n")
    with pytest.raises(ConfigError, match="expected a valid TOML file"):
        load_config(tmp_path)


def test_defaults_without_a_table(tmp_path):
    assert load_config(tmp_path) == Config()
    write_project(tmp_path, "timeout = 5")
    assert load_config(tmp_path).timeout == 5.0
    assert load_config(tmp_path, overrides={"backend": "eager"}).backend == "eager"


def test_entrypoints_that_resolve_badly_in_the_worker():
    entries = {
        "pkg.missing_module:entry": "expected an importable module (No module named "
        "'pkg.missing_module'",
        "pkg.entries:missing_function": "expected module 'pkg.entries' to define "
        "'missing_function'",
        "pkg.entries:NOT_A_FUNCTION": "expected 'NOT_A_FUNCTION' to be a function, not an int",
        "pkg.entries:returns_wrong_shape": "expected the entrypoint to return (callable, args)"
        " or (callable, args, kwargs); it returned an int",
        "pkg.entries:returns_non_callable": "whose first item is callable, not a str",
        "pkg.entries:returns_bad_args": "with args a tuple or list, not an int",
    }
    args = ["check", "--no-static", "--json"]
    for entry in entries:
        args += ["--entry", entry]
    completed = run_cli(*args, cwd=ISOLATION, timeout=180)
    assert completed.returncode == 2
    results = {r["entry"]: r for r in json_output(completed)["entrypoints"]}
    for entry, expected in entries.items():
        error = results[entry]["error"]
        assert results[entry]["status"] == "config_error", entry
        assert error["key"] == "--entry"
        assert error["value"] == entry
        assert expected in error["message"], error["message"]


def test_import_error_inside_the_users_module_is_a_user_exception():
    completed = run_cli(
        "check",
        "--no-static",
        "--json",
        "--entry",
        "pkg.broken_import:entry",
        cwd=ISOLATION,
        timeout=120,
    )
    assert completed.returncode == 1
    (result,) = json_output(completed)["entrypoints"]
    assert result["status"] == "user_exception"
    assert "module_that_does_not_exist" in result["error"]["message"]
    assert "broken_import.py" in result["error"]["traceback"]


def test_usage_errors_exit_2(tmp_path):
    assert run_cli(cwd=tmp_path).returncode == 2
    completed = run_cli("check", "--timeout", "-3", cwd=tmp_path)
    assert completed.returncode == 2
    assert "expected a positive number of seconds" in completed.stderr
    assert run_cli("check", "does/not/exist", cwd=tmp_path).returncode == 2


def test_console_script_is_installed(tmp_path):
    script = Path(sys.executable).parent / "fullgraph"
    assert script.is_file(), "pip install -e . should create the `fullgraph` console script"
    completed = subprocess.run(
        [str(script), "--help"], capture_output=True, text=True, cwd=tmp_path, check=False
    )
    assert completed.returncode == 0
    for command in ("check", "explain", "fix", "compile", "lsp"):
        assert command in completed.stdout
