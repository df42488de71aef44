"""Output other tools read: ``fix --diff`` for git apply / patch, SARIF and the summary.

Each test runs the real CLI in a throwaway project and hands its output to the
tool a user would: ``git apply --check`` and ``patch -p1 --dry-run`` for the
diff, a SARIF reader's view of the results for syntax errors.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
from cli_helpers import PROJECTS, json_output, needs_fix, needs_lint, run_cli

STATIC = PROJECTS / "static"
BROKEN = "import torch\n\n\ndef step(x: torch.Tensor):\n    return (x\n"


def make_repo(tmp_path):
    """A git repository holding the static project under pkg/, committed."""
    repo = tmp_path / "repo"
    shutil.copytree(STATIC, repo / "pkg")
    (repo / "pyproject.toml").write_text("[tool.fullgraph]\n")
    for args in (
        ["init", "-q"],
        ["add", "."],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init"],
    ):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    return repo


def assert_tools_accept(repo, diff: str) -> None:
    (repo / "fix.patch").write_text(diff)
    for command in (
        ["git", "apply", "--check", "fix.patch"],
        ["patch", "-p1", "--dry-run", "-i", "fix.patch"],
    ):
        done = subprocess.run(command, cwd=repo, capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"{command}: {done.stdout}{done.stderr}\n{diff}"


@needs_fix
@pytest.mark.parametrize("paths", [[], ["pkg"], ["pkg/model.py"], ["ABSOLUTE"]])
def test_fix_diff_applies_with_git_and_patch(tmp_path, paths):
    repo = make_repo(tmp_path)
    paths = [str(repo / "pkg" / "model.py") if p == "ABSOLUTE" else p for p in paths]
    completed = run_cli("fix", "--diff", *paths, cwd=repo)
    assert completed.returncode == 1, completed.stderr
    assert completed.stdout.startswith("--- a/pkg/model.py\n+++ b/pkg/model.py\n")
    assert_tools_accept(repo, completed.stdout)
    # Applied, the patch gives what `fullgraph fix` writes.
    subprocess.run(["git", "apply", "fix.patch"], cwd=repo, check=True)
    patched = (repo / "pkg" / "model.py").read_text()
    subprocess.run(["git", "checkout", "-q", "--", "pkg/model.py"], cwd=repo, check=True)
    assert run_cli("fix", cwd=repo).returncode == 0
    assert (repo / "pkg" / "model.py").read_text() == patched


@needs_fix
def test_fix_diff_from_a_subfolder_is_relative_to_it(tmp_path):
    repo = make_repo(tmp_path)
    completed = run_cli("fix", "--diff", "model.py", cwd=repo / "pkg")
    assert completed.stdout.startswith("--- a/model.py\n")
    assert_tools_accept(repo / "pkg", completed.stdout)


@needs_lint
def test_a_syntax_error_is_a_sarif_result_and_no_clean_summary(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.fullgraph]\n")
    (tmp_path / "broken.py").write_text(BROKEN)
    sarif = run_cli("check", "--sarif", cwd=tmp_path)
    assert sarif.returncode == 1
    run = json_output(sarif)["runs"][0]
    (result,) = run["results"]
    assert result["ruleId"] == "FG001" and result["level"] == "error"
    assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == "FG001"
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "broken.py", "uriBaseId": "%SRCROOT%"}
    assert location["region"]["startLine"] >= 5

    text = run_cli("check", "--no-progress", cwd=tmp_path)
    assert text.returncode == 1
    lines = text.stdout.splitlines()
    assert lines[0].startswith("broken.py:") and " FG001 SyntaxError: " in lines[0]
    assert "No graph breaks found" not in text.stdout
    assert lines[-1].startswith("Found 1 file with a syntax error (FG001: not checked)")
