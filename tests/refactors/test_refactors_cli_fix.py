"""`fullgraph fix` applies the refactors' fixes (the CLI is the service's; the fixes are ours)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from fullgraph.refactors import fix_source

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("fullgraph.lsp_server.cli.main") is None,
    reason="the fullgraph CLI is not built yet",
)

FIXTURE = Path(__file__).parent / "fixtures" / "predicated_branches.py"


def _project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.fullgraph]\nentrypoints = []\n")
    target = tmp_path / "model.py"
    target.write_text(FIXTURE.read_text(encoding="utf-8"), encoding="utf-8")
    return target


def test_fix_diff_shows_the_rewrite_and_leaves_the_file(tmp_path, capsys) -> None:
    from fullgraph.lsp_server.cli.main import main

    target = _project(tmp_path)
    before = target.read_text()
    main(["fix", "--diff", "--root", str(tmp_path), str(target)])
    diff = capsys.readouterr().out
    assert "-        if x.sum() > 0:\n" in diff
    assert "+        y = torch.where(x.sum() > 0, x * 2, x - 1)\n" in diff
    assert target.read_text() == before


def test_fix_writes_the_same_text_as_fix_source(tmp_path) -> None:
    from fullgraph.lsp_server.cli.main import main

    target = _project(tmp_path)
    expected = fix_source(target.read_text(), str(target))
    main(["fix", "--root", str(tmp_path), str(target)])
    assert target.read_text() == expected
    assert "torch.where" in expected
