"""The rule pages under docs/rules are generated from the rules and must be current."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fullgraph.refactors import RULES
from fullgraph.refactors.docs import main, render_all, stale_pages

DOCS = Path(__file__).resolve().parents[2] / "docs" / "rules"


def test_committed_docs_are_current() -> None:
    stale = stale_pages(DOCS)
    assert stale == [], (
        f"docs/rules is stale ({', '.join(stale)}); run `python -m fullgraph.refactors.docs`"
    )


def test_check_mode_fails_on_a_stale_page(tmp_path: Path) -> None:
    assert main(["--out", str(tmp_path)]) == 0
    assert main(["--out", str(tmp_path), "--check"]) == 0
    page = tmp_path / "FG101.md"
    page.write_text(page.read_text() + "edited by hand\n")
    assert main(["--out", str(tmp_path), "--check"]) == 1


@pytest.mark.parametrize("code", list(RULES))
def test_every_page_has_the_ruff_sections(code: str) -> None:
    page = render_all()[f"{code}.md"]
    for heading in (
        "## What it does",
        "## Why is this bad?",
        "## Example",
        "## Use instead",
        "## Fix safety",
    ):
        assert heading in page


def test_codes_are_stable_static_codes() -> None:
    assert list(RULES) == ["FG101", "FG102", "FG103", "FG104", "FG105", "FG106"]
    for code, rule in RULES.items():
        assert re.fullmatch(r"FG1\d\d", code) and rule.CODE == code
        assert rule.MESSAGE and rule.NAME and rule.INVALID
