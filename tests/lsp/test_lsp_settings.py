"""Settings: defaults, [tool.fullgraph], then the client; bad values reported, defaults kept."""

from __future__ import annotations

from pathlib import Path

from fullgraph.lsp_server.settings import Settings, merge, resolve, snake_case


def write_pyproject(root: Path, body: str) -> Path:
    (root / "pyproject.toml").write_text(body, encoding="utf-8")
    return root


def test_defaults_work_without_any_configuration(tmp_path):
    settings, problems = resolve(tmp_path, None)
    assert settings == Settings() and problems == []


def test_client_settings_override_pyproject_key_by_key(tmp_path):
    root = write_pyproject(
        tmp_path,
        '[tool.fullgraph]\nentrypoints = ["pkg.mod:build"]\ntimeout = 30\nbackend = "eager"\n',
    )
    settings, problems = resolve(
        root, {"fullgraph": {"timeout": 5, "runOnSave": False, "debounce-ms": 10}}
    )
    assert problems == []
    assert settings.entrypoints == ["pkg.mod:build"]  # from pyproject
    assert settings.backend == "eager"
    assert settings.timeout == 5.0  # the client wins
    assert settings.run_on_save is False and settings.debounce_ms == 10


def test_bad_values_are_named_and_the_previous_layer_kept(tmp_path):
    root = write_pyproject(tmp_path, "[tool.fullgraph]\ntimeout = 30\n")
    settings, problems = resolve(
        root,
        {
            "timeout": "soon",
            "runOnSave": "no",
            "entrypoints": "pkg.mod:build",
            "backend": "xla",
            "memoryMb": 2.5,
            "debounceMs": -1,
        },
    )
    assert settings.timeout == 30.0 and settings.run_on_save is True
    assert settings.entrypoints == [] and settings.backend == "inductor"
    assert settings.memory_mb == 4096 and settings.debounce_ms == 150
    text = "\n".join(problem.message for problem in problems)
    assert (
        "`timeout` = 'soon' is invalid (expected a positive number of seconds); using 30.0" in text
    )
    assert "`runOnSave` = 'no' is invalid (expected true or false)" in text
    assert (
        "`entrypoints` = 'pkg.mod:build' is invalid "
        '(expected a list of "package.module:function" strings)'
    ) in text
    assert "`backend` = 'xla' is invalid (expected one of 'inductor', 'eager')" in text
    assert "`memoryMb` = 2.5 is invalid (expected a non-negative integer" in text
    assert "`debounceMs` = -1 is invalid (expected a non-negative whole number" in text


def test_unreadable_pyproject_is_reported_and_defaults_used(tmp_path):
    root = write_pyproject(tmp_path, "[tool.fullgraph\n")
    settings, problems = resolve(root, None)
    assert settings == Settings()
    assert len(problems) == 1 and "cannot read" in problems[0].message


def test_non_object_client_settings_are_ignored_with_a_message():
    settings, problems = merge(Settings(), ["not", "a", "dict"], "client settings")  # type: ignore[arg-type]
    assert settings == Settings() and "must be an object" in problems[0].message


def test_key_spellings():
    assert snake_case("runOnSave") == "run_on_save"
    assert snake_case("debounce-ms") == "debounce_ms"
    assert snake_case("memory_mb") == "memory_mb"


def test_nested_client_sections_as_the_vscode_extension_sends_them():
    settings, problems = resolve(
        None, {"diagnostics": {"static": False, "runtime": False}, "interpreter": []}
    )
    assert problems == []
    assert settings.diagnostics_static is False and settings.diagnostics_runtime is False
    settings, problems = resolve(None, {"diagnostics.static": False, "diagnostics": "off"})
    assert settings.diagnostics_static is False
    # "diagnostics" alone is not a setting: ignored with a warning, like other unknown keys.
    expected = (
        "fullgraph: client settings: unknown setting `diagnostics` ignored (known settings: "
        "entrypoints, timeout, memory_mb, backend, python, run_on_save, debounce_ms, "
        "diagnostics.static, diagnostics.runtime, ignore, break_severity, docs_base_url, "
        "compiled_dir, interpreter)"
    )
    assert [problem.message for problem in problems] == [expected]


def test_an_unknown_key_is_a_warning_and_the_rest_applies(tmp_path):
    root = write_pyproject(tmp_path, "[tool.fullgraph]\ntimout = 3\ntimeout = 7\n")
    settings, problems = resolve(root, {"runOnSafe": False})
    assert settings.timeout == 7.0 and settings.run_on_save is True
    assert [(p.kind, p.key) for p in problems] == [("unknown", "timout"), ("unknown", "runOnSafe")]
    assert (
        "pyproject.toml [tool.fullgraph]: unknown setting `timout` ignored" in problems[0].message
    )
