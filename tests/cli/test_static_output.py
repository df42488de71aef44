"""``fullgraph check`` on static findings alone: ruff-style lines, JSON and SARIF positions.

The fixture ``projects/static/model.py`` has one ``print`` in a ``forward`` (FG102).
No entrypoints are configured, so no worker starts.
"""

from __future__ import annotations

import json
import shutil

import jsonschema
from cli_helpers import PROJECTS, json_output, line_of, needs_fix, needs_lint, run_cli

STATIC = PROJECTS / "static"
MODEL = STATIC / "model.py"

# The parts of SARIF 2.1.0 a code-scanning UI relies on.
SARIF_SUBSET = {
    "type": "object",
    "required": ["version", "runs"],
    "properties": {
        "version": {"const": "2.1.0"},
        "runs": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["tool", "results"],
                "properties": {
                    "tool": {
                        "type": "object",
                        "required": ["driver"],
                        "properties": {
                            "driver": {
                                "type": "object",
                                "required": ["name", "rules"],
                                "properties": {
                                    "rules": {
                                        "type": "array",
                                        "items": {"type": "object", "required": ["id"]},
                                    }
                                },
                            }
                        },
                    },
                    "results": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["ruleId", "message", "locations"],
                            "properties": {
                                "message": {"type": "object", "required": ["text"]},
                                "level": {"enum": ["none", "note", "warning", "error"]},
                                "locations": {
                                    "type": "array",
                                    "items": {
                                        "type": "object",
                                        "required": ["physicalLocation"],
                                        "properties": {
                                            "physicalLocation": {
                                                "type": "object",
                                                "required": ["artifactLocation", "region"],
                                                "properties": {
                                                    "region": {
                                                        "type": "object",
                                                        "required": ["startLine", "startColumn"],
                                                        "properties": {
                                                            "startLine": {"minimum": 1},
                                                            "startColumn": {"minimum": 1},
                                                        },
                                                    }
                                                },
                                            }
                                        },
                                    },
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}


@needs_lint
def test_text_lines_are_ruff_style_with_1_based_columns():
    completed = run_cli("check", "--no-progress", cwd=STATIC)
    assert completed.returncode == 1
    line, column = line_of(MODEL, "print(")
    expected = f"model.py:{line}:{column + 1}: FG102 [*] `print` is a Python side effect"
    assert any(out.startswith(expected) for out in completed.stdout.splitlines()), completed.stdout
    summary = completed.stdout.splitlines()[-1]
    assert "1 static finding (FG102: 1, 1 fixable with `fullgraph fix`)" in summary


@needs_lint
def test_json_and_sarif_agree_on_the_location():
    line, column = line_of(MODEL, "print(")
    document = json_output(run_cli("check", "--json", cwd=STATIC))
    (diagnostic,) = [d for d in document["diagnostics"] if d["code"] == "FG102"]
    assert (diagnostic["line"], diagnostic["column"]) == (line, column)
    assert diagnostic["path"] == str(MODEL)
    assert diagnostic["fixable"] is True

    completed = run_cli("check", "--sarif", cwd=STATIC)
    assert completed.returncode == 1
    sarif = json.loads(completed.stdout)
    jsonschema.validate(sarif, SARIF_SUBSET)
    run = sarif["runs"][0]
    assert run["columnKind"] == "unicodeCodePoints"
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == STATIC.as_uri() + "/"
    (result,) = [r for r in run["results"] if r["ruleId"] == "FG102"]
    assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == "FG102"
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "model.py", "uriBaseId": "%SRCROOT%"}
    region = location["region"]
    assert (region["startLine"], region["startColumn"]) == (line, column + 1)
    source_line = MODEL.read_text().splitlines()[region["startLine"] - 1]
    assert source_line[region["startColumn"] - 1 :].startswith("print(")
    assert result["level"] == "warning"


@needs_lint
def test_advice_is_hidden_unless_asked_for(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "clean.py").write_text(
        "import torch\n\n\ndef step(x: torch.Tensor) -> torch.Tensor:\n    return x * 2\n"
    )
    default = run_cli("check", "--json", cwd=tmp_path)
    assert default.returncode == 0
    everything = json_output(run_cli("check", "--json", "--severity", "hint", cwd=tmp_path))
    # `step` is a compilation candidate (FG106, information): advice, not a problem.
    assert {d["severity"] for d in everything["diagnostics"]} & {"information", "hint"}
    assert json_output(default)["diagnostics"] == [
        d for d in everything["diagnostics"] if d["severity"] in ("error", "warning")
    ]


@needs_fix
def test_fix_diff_then_write_then_clean(tmp_path):
    project = tmp_path / "project"
    shutil.copytree(STATIC, project)
    model = project / "model.py"
    original = model.read_text()

    diff = run_cli("fix", "--diff", "--select", "FG102", cwd=project)
    assert diff.returncode == 1
    assert diff.stdout.startswith("--- a/")
    assert '-        print("h:", h.shape)' in diff.stdout
    assert model.read_text() == original  # --diff never writes

    written = run_cli("fix", "--select", "FG102", cwd=project)
    assert written.returncode == 0
    assert "1 file fixed." in written.stderr
    assert model.read_text() != original
    compile(model.read_text(), str(model), "exec")

    again = run_cli("fix", "--diff", "--select", "FG102", cwd=project)
    assert again.returncode == 0
    assert again.stdout == ""
    after = json_output(run_cli("check", "--json", cwd=project))
    assert not [d for d in after["diagnostics"] if d["code"] == "FG102"]
