"""One test per VALID / INVALID example embedded in each rule (generated, Fixit-style)."""

from __future__ import annotations

import libcst as cst
import pytest

from fullgraph.refactors import RULES, apply_edits, fix_source, lint_source
from fullgraph.refactors.rule import Invalid, Valid


def _cases(kind: type):
    for code, rule in RULES.items():
        cases = rule.VALID if kind is Valid else rule.INVALID
        for index, case in enumerate(cases):
            yield pytest.param(code, case, id=f"{code}-{kind.__name__.lower()}-{index}")


def _own(code: str, source: str):
    return [f for f in lint_source(source) if f.code == code]


@pytest.mark.parametrize(("code", "case"), list(_cases(Valid)))
def test_valid_example_reports_nothing(code: str, case: Valid) -> None:
    assert _own(code, case.code) == []


@pytest.mark.parametrize(("code", "case"), list(_cases(Invalid)))
def test_invalid_example_is_reported(code: str, case: Invalid) -> None:
    findings = _own(code, case.code)
    assert findings, f"{code} did not report its INVALID example"
    first = findings[0]
    if case.line is not None:
        assert (first.line, first.column) == (case.line, case.column)
    assert first.doc_path == f"docs/rules/{code}.md"
    if case.refusal is not None:
        explained = [f"{f.refusal_reason or ''} {f.message}" for f in findings]
        assert any(case.refusal in text for text in explained), explained


@pytest.mark.parametrize(
    ("code", "case"), [p for p in _cases(Invalid) if p.values[1].expected_replacement is not None]
)
def test_fix_gives_expected_replacement(code: str, case: Invalid) -> None:
    findings = _own(code, case.code)
    assert findings[0].fix is not None
    # The finding's own edits apply to the original text and give valid Python.
    cst.parse_module(apply_edits(case.code, findings[0].fix.edits))
    fixed = fix_source(case.code, codes={code})
    assert fixed == case.expected_replacement
    # Idempotent: fixing the fixed code changes nothing.
    assert fix_source(fixed, codes={code}) == fixed


@pytest.mark.parametrize(
    ("code", "case"), [p for p in _cases(Invalid) if p.values[1].expected_replacement is None]
)
def test_no_fix_without_expected_replacement(code: str, case: Invalid) -> None:
    assert all(f.fix is None for f in _own(code, case.code))
    assert fix_source(case.code, codes={code}) == case.code


def test_has_fix_is_derived_from_examples() -> None:
    assert {code for code, rule in RULES.items() if rule.has_fix()} == {
        "FG101",
        "FG102",
        "FG103",
        "FG106",
    }
