"""The engine: suppression comments, syntax errors, positions, minimal edits, imports, entrypoints."""

from __future__ import annotations

import libcst as cst
import pytest

from fullgraph.refactors import SourceSyntaxError, apply_edits, fix_source, lint_source

BRANCHY = (
    "import torch\n"
    "\n"
    "\n"
    "def f(x: torch.Tensor) -> torch.Tensor:\n"
    "    if x.sum() > 0:{comment}\n"
    "        x = x * 2\n"
    "    return x\n"
)


@pytest.mark.parametrize(
    ("comment", "reported"),
    [
        ("", True),
        ("  # fullgraph: ignore", False),
        ("  # fullgraph: ignore[FG101]", False),
        ("  # fullgraph: ignore[FG104, FG101]", False),
        ("  # fullgraph: ignore[FG102]", True),  # another code stays reported
        ("  # fullgraph:ignore[fg101]", False),
    ],
)
def test_inline_suppression(comment: str, reported: bool) -> None:
    codes = [f.code for f in lint_source(BRANCHY.format(comment=comment))]
    assert ("FG101" in codes) is reported


def test_suppression_inside_a_string_does_not_count() -> None:
    source = BRANCHY.format(comment="").replace(
        "        x = x * 2\n", "        x = x * 2\n    s = '# fullgraph: ignore'\n"
    )
    assert "FG101" in [f.code for f in lint_source(source)]


def test_syntax_error_has_a_position() -> None:
    with pytest.raises(SourceSyntaxError) as caught:
        lint_source("def f(:\n    pass\n")
    assert (caught.value.line, caught.value.column) == (1, 6)
    assert "line 1, column 6" in str(caught.value)


def test_columns_count_code_points() -> None:
    source = (
        "import torch\n\n\n"
        "def f(x: torch.Tensor):\n"
        '    return ("ääää", x * 2 if (x > 0).all() else x)\n'
    )
    (finding,) = [f for f in lint_source(source) if f.code == "FG101"]
    line = source.splitlines()[finding.line - 1]
    assert line[finding.column : finding.end_column] == "(x > 0).all()"


def test_fix_edits_are_minimal_and_leave_other_lines_alone() -> None:
    source = (
        "import torch\n"
        "\n"
        "UNRELATED = 1  # keep me\n"
        "\n"
        "\n"
        "@torch.compile\n"
        "def f(x: torch.Tensor) -> torch.Tensor:\n"
        "    if x.sum() > 0:\n"
        "        y = x * 2\n"
        "    else:\n"
        "        y = x\n"
        "    return y\n"
    )
    (finding,) = [f for f in lint_source(source) if f.code == "FG101"]
    (edit,) = finding.fix.edits
    # Only the four lines of the `if` are replaced.
    assert (edit.line, edit.column, edit.end_line, edit.end_column) == (8, 0, 12, 0)
    assert edit.new_text == "    y = torch.where(x.sum() > 0, x * 2, x)\n"
    assert apply_edits(source, finding.fix.edits) == fix_source(source, codes={"FG101"})


def test_import_is_added_once_for_several_fixes() -> None:
    source = (
        '"""Module docstring."""\n'
        "from torch import nn\n"
        "\n"
        "\n"
        "class M(nn.Module):\n"
        "    def forward(self, x):\n"
        "        print('a', x)\n"
        "        print('b', x)\n"
        "        if x.sum() > 0:\n"
        "            x = x * 2\n"
        "        return x\n"
    )
    fixed = fix_source(source, codes={"FG101", "FG102"})
    cst.parse_module(fixed)
    assert fixed.count("import torch\n") == 1
    assert fixed.count("from fullgraph.refactors.support import") == 1
    assert fixed.count("@defer_side_effects") == 1
    assert fixed.startswith('"""Module docstring."""\nfrom torch import nn\n')
    assert fix_source(fixed, codes={"FG101", "FG102"}) == fixed


def test_codes_filter_limits_fix_source() -> None:
    source = BRANCHY.format(comment="").replace("def f", "@torch.compile\ndef f")
    assert fix_source(source, codes={"FG102"}) == source
    assert fix_source(source, codes={"FG101"}) != source


def test_fix_changes_only_what_check_reports() -> None:
    # Outside a compiled region a finding is a hint, which `fullgraph check` does not
    # show: its fix stays a quick fix and `fix_source` leaves the code alone.
    plain = BRANCHY.format(comment="")
    (finding,) = [f for f in lint_source(plain) if f.code == "FG101"]
    assert finding.severity == "hint" and finding.fix is not None
    assert fix_source(plain) == plain


def test_one_round_applies_every_fix_that_does_not_overlap(monkeypatch) -> None:
    from fullgraph.refactors import fixing

    body = "".join(f"        print('step {i}', x)\n        x = x + {i}\n" for i in range(30))
    source = (
        "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n"
        "    def forward(self, x):\n" + body + "        assert (x > 0).all(), 'positive'\n"
        "        return x\n"
    )
    rounds = []
    original = fixing.lint_with_context
    monkeypatch.setattr(fixing, "lint_with_context", lambda *a: rounds.append(1) or original(*a))
    fixed = fix_source(source)
    assert fixed.count("deferred(print, ") == 30 and fixed.count("@defer_side_effects") == 1
    assert "check((x > 0).all(), AssertionError, 'positive')" in fixed
    # One whole-file lint fixes everything; asking whether anything is left re-lints only
    # the rewritten chunks (the incremental linter), not the whole file again.
    assert len(rounds) == 1
    assert fix_source(fixed) == fixed


def test_entrypoints_make_a_compiled_region() -> None:
    source = "import torch\n\n\ndef step(x: torch.Tensor):\n    print(x)\n    return x\n"
    assert [f.code for f in lint_source(source) if f.code == "FG102"] == []
    findings = [f for f in lint_source(source, entrypoints=["step"]) if f.code == "FG102"]
    assert len(findings) == 1 and "configured entrypoint" in findings[0].message


def test_severity_is_a_hint_outside_compiled_regions() -> None:
    plain = BRANCHY.format(comment="")
    compiled = plain.replace("def f", "@torch.compile\ndef f")
    assert {f.severity for f in lint_source(plain) if f.code == "FG101"} == {"hint"}
    assert {f.severity for f in lint_source(compiled) if f.code == "FG101"} == {"warning"}


def test_findings_are_sorted_and_carry_doc_paths() -> None:
    findings = lint_source(
        "import torch\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n"
        "    print(x)\n    assert (x > 0).all()\n    return x[x > 0]\n"
    )
    positions = [(f.line, f.column) for f in findings]
    assert positions == sorted(positions)
    assert {f.code for f in findings} >= {"FG102", "FG103", "FG105"}
    assert all(f.doc_path == f"docs/rules/{f.code}.md" for f in findings)


def test_hybridization_is_applied_only_when_selected() -> None:
    source = "import torch\n\n\ndef f(x: torch.Tensor) -> torch.Tensor:\n    return x.relu()\n"
    (finding,) = [f for f in lint_source(source) if f.code == "FG106"]
    assert finding.fix is not None  # offered as a quick fix in the editor
    assert fix_source(source) == source
    assert "@fullgraph.runtime.compile\ndef f" in fix_source(source, codes={"FG106"})


def test_a_failing_rule_costs_only_its_own_findings(monkeypatch, caplog) -> None:
    from fullgraph.refactors.rules import RULES

    def visit_Call(self, node):  # libcst finds visitor methods by their __name__
        raise RuntimeError("rule bug")

    monkeypatch.setattr(RULES["FG105"], "visit_Call", visit_Call)
    source = BRANCHY.format(comment="")
    assert [f.code for f in lint_source(source) if f.code == "FG101"] == ["FG101"]
    assert "rule FG105 failed" in caplog.text
