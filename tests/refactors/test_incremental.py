"""The incremental linter (what the language server runs per edit) equals lint_source.

On every source the other refactors tests lint (the rules' examples, the
corpus programs, the examples, the fixtures), on layouts that stress the
chunking (comments between statements, ``;`` and ``\\`` joins, CRLF and
tabs, a file without a final newline) and after random single-line edits,
:class:`IncrementalLinter` must report exactly the findings of a whole-file
``lint_source`` — code, position, message, severity, refusal — and each fix
must rewrite the file to the same text.  After an edit it must lint only the
chunks the edit can reach.
"""

from __future__ import annotations

import importlib.util
import logging
import random
import re
from pathlib import Path

import pytest

from fullgraph.refactors import RULES, SourceSyntaxError, apply_edits, lint_source
from fullgraph.refactors.incremental import linter as incremental
from fullgraph.refactors.incremental.chunking import line_starts, rechunk, split_chunks
from fullgraph.refactors.incremental.linter import IncrementalLinter

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ROOT / "tests" / "programs"
FIXTURES = Path(__file__).resolve().parent / "fixtures"

# Layouts the chunking must get right, and that a formatter would not let live in a file.
LAYOUT = (
    "# A license header, then a function before the first import: an added import\n"
    "# goes at the very top of the file.\n"
    "def first(x):\n"
    "    return x.relu()\n"
    "\n"
    "\n"
    "import torch\n"
    "import fullgraph.runtime as fr\n"
    "\n"
    "x = 1; \\\n"
    "y = 2\n"
    's = "a\u2028b\x0cc"  # a line separator and a form feed inside a string\n'
    "\n"
    "\n"
    "def f(x: torch.Tensor) -> torch.Tensor:\n"
    "  return torch.where(x > 0, x, -x)\n"
    "  # an indented comment after the block\n"
    "# a comment at column 0\n"
    "\n"
    "def g(x: torch.Tensor) -> torch.Tensor:\n"
    "    if x.sum() > 0:\n"
    "        y = x\n"
    "    else:\n"
    "        y = -x\n"
    "    return y\n"
    "class A: pass\n"
    "@torch.compile\n"
    "def h(x): print(x); return torch.nonzero(x)"
)
CRLF_TABS = (
    "import torch\r\n\r\n\r\n"
    "def f(x: torch.Tensor) -> torch.Tensor:\r\n"
    "\tif x.sum() > 0:\r\n\t\ty = x * 2\r\n\telse:\r\n\t\ty = x\r\n\treturn y\r\n"
    "\r\n@torch.compile\r\ndef g(x):\r\n\tprint(x)\r\n\treturn f(x)\r\n"
)
# Sources whose fixes may legitimately come from the whole-file lint (see incremental/fixes.py).
WHOLE_FILE_FIXES = {"layout"}


def _bench_source(lines: int) -> str:
    spec = importlib.util.spec_from_file_location("lsp_latency", ROOT / "bench" / "lsp_latency.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate(lines)


def _sources() -> dict[str, str]:
    sources = {}
    for code, rule in RULES.items():
        for kind, cases in (("valid", rule.VALID), ("invalid", rule.INVALID)):
            for index, case in enumerate(cases):
                sources[f"{code}-{kind}-{index}"] = case.code
    for folder in (PROGRAMS, ROOT / "examples", FIXTURES, FIXTURES / "incremental"):
        for path in sorted(folder.glob("*.py")):
            if path.stem not in ("__init__", "loader"):
                sources[f"{folder.name}/{path.stem}"] = path.read_text(encoding="utf-8")
    sources["layout"] = LAYOUT
    sources["crlf-tabs"] = CRLF_TABS
    sources["cr"] = CRLF_TABS.replace("\r\n", "\r")
    return sources


SOURCES = _sources()
# Random edits on a spread of the sources: each costs two lints, so not on all of them.
EDITED = sorted(
    name
    for index, name in enumerate(sorted(SOURCES))
    if index % 10 == 0 or not name.startswith(("FG", "programs/"))
)


def _visible(finding) -> tuple:
    fix_title = finding.fix.title if finding.fix is not None else None
    return (
        finding.code,
        finding.line,
        finding.column,
        finding.end_line,
        finding.end_column,
        finding.message,
        finding.severity,
        finding.refusal_reason,
        fix_title,
    )


def _lint_both(linter: IncrementalLinter, source: str, **options):
    """(whole-file findings, incremental findings), or the two syntax errors."""
    try:
        whole = lint_source(source, **options)
    except SourceSyntaxError as error:
        with pytest.raises(SourceSyntaxError) as caught:
            linter.lint(source)
        assert (caught.value.message, caught.value.line, caught.value.column) == (
            error.message,
            error.line,
            error.column,
        )
        return None
    return whole, linter.lint(source)


def _assert_same(source: str, whole, incremental, fixes: int | None = None) -> None:
    assert [_visible(f) for f in incremental] == [_visible(f) for f in whole]
    fixed = [(w, i) for w, i in zip(whole, incremental) if w.fix is not None]
    for expected, actual in fixed[:fixes]:
        assert apply_edits(source, actual.fix.edits) == apply_edits(source, expected.fix.edits)
        assert actual.fix.edits == expected.fix.edits


@pytest.fixture
def own_cache(monkeypatch):
    """No results from other tests' linters: counts of re-linted chunks are this test's."""
    monkeypatch.setattr(incremental, "_SHARED", incremental._SharedResults(capacity=4000))


@pytest.fixture
def whole_file_fixes(caplog):
    """The messages of fixes that had to be taken from a whole-file lint."""
    caplog.set_level(logging.WARNING, logger="fullgraph.refactors.incremental")
    return lambda: [r.getMessage() for r in caplog.records]


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_same_findings_and_fixes_as_the_whole_file(
    name: str, whole_file_fixes, monkeypatch
) -> None:
    # Each chunk in a partial module of only the chunks it needs, as after an edit (an
    # opening lints them together, which would hide a dependency the linter missed).
    monkeypatch.setattr(incremental, "_GROUP_CHARACTERS", 0)
    monkeypatch.setattr(incremental, "_SHARED", incremental._SharedResults(capacity=4000))
    source = SOURCES[name]
    # Entrypoints change which functions are compiled; the sources written for it try them.
    configured = name in ("layout", "crlf-tabs", "cr", "incremental/cross_chunk")
    for entrypoints in ((), ("helper", "first", "f")) if configured else ((),):
        linter = IncrementalLinter(entrypoints=entrypoints)
        both = _lint_both(linter, source, entrypoints=entrypoints)
        assert both is not None
        _assert_same(source, *both, fixes=5)
    if name not in WHOLE_FILE_FIXES:
        assert whole_file_fixes() == []


def _identifiers(source: str) -> list[str]:
    return sorted(set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", source)))


def _random_edit(source: str, rng: random.Random) -> str:
    """``source`` with one line changed the way a user might change it."""
    starts = line_starts(source)
    index = rng.randrange(len(starts))
    start = starts[index]
    end = starts[index + 1] if index + 1 < len(starts) else len(source)
    line = source[start:end]
    body = line.rstrip("\r\n")
    indent = body[: len(body) - len(body.lstrip())]
    newline = line[len(body) :] or "\n"
    words = list(re.finditer(r"[A-Za-z_][A-Za-z0-9_]*", body))
    kind = rng.choice(
        ["rename", "number", "delete", "duplicate", "blank", "comment", "print", "ignore"]
    )
    if kind == "rename" and words:
        word = rng.choice(words)
        replacement = rng.choice(_identifiers(source))
        body = body[: word.start()] + replacement + body[word.end() :]
        new = body + newline
    elif kind == "number":
        new = re.sub(r"\d", lambda _: str(rng.randrange(10)), body, count=1) + " * 2" + newline
    elif kind == "delete":
        new = ""
    elif kind == "duplicate":
        new = line + line if line.endswith(("\n", "\r")) else line + newline + line
    elif kind == "blank":
        new = newline + line
    elif kind == "comment":
        new = indent + "# " + body.lstrip() + newline
    elif kind == "print" and indent:
        new = f"{indent}print({rng.choice(_identifiers(source))}){newline}{line}"
    else:
        new = body + "  # fullgraph: ignore" + newline
    return source[:start] + new + source[end:]


@pytest.mark.parametrize("name", EDITED)
def test_same_findings_after_random_edits(name: str, whole_file_fixes) -> None:
    rng = random.Random(name)
    source = SOURCES[name]
    linter = IncrementalLinter()
    linter.lint(source)
    for _ in range(3):
        before, source = source, _random_edit(source, rng)
        _assert_same_chunks(before, source)
        both = _lint_both(linter, source)
        if both is not None:
            # Fixes cost two whole-file passes each: check a few per edit.
            _assert_same(source, *both, fixes=2)
    if name not in WHOLE_FILE_FIXES:
        assert whole_file_fixes() == []


def _assert_same_chunks(before: str, after: str) -> None:
    """Re-parsing only what an edit changed cuts the file like parsing all of it."""
    try:
        old = split_chunks(before)
    except SyntaxError:
        return
    partly = rechunk(before, old, after, {})
    if partly is not None:
        assert partly == split_chunks(after)


def test_an_edit_relints_only_the_chunks_it_reaches(own_cache) -> None:
    source = (FIXTURES / "incremental" / "cross_chunk.py").read_text(encoding="utf-8")
    linter = IncrementalLinter()
    linter.lint(source)
    # An edit inside `Sub` reaches its own chunk and that of its base class `Base`
    # (FG101 looks at the subclasses of a class), no other.
    edited = source.replace("return x * 2", "return x * 3")
    _assert_same(edited, lint_source(edited), linter.lint(edited))
    assert linter.relinted == 2
    # `helper` is compiled because `entry` calls it: once `entry` stops calling it, the
    # unchanged `helper` chunk is linted again and its side effects are no longer breaks.
    edited = edited.replace("return helper(x) + ping(x)", "return ping(x)")
    before = {f.code for f in lint_source(source) if 19 <= f.line <= 26}
    findings = linter.lint(edited)
    _assert_same(edited, lint_source(edited), findings)
    # `entry`, `helper`, and `ping` and `pong`, which `entry` still calls.
    assert linter.relinted == 4
    assert "FG102" in before
    assert "FG102" not in {f.code for f in findings if 19 <= f.line <= 26}
    # Lines added above a chunk move its findings without linting it again.
    moved = "# a new comment\n\n" + edited
    _assert_same(moved, lint_source(moved), linter.lint(moved))
    assert linter.relinted == 1  # the first chunk, which holds the new lines


def test_methods_of_the_same_name_in_other_classes_are_no_dependency(own_cache) -> None:
    source = (FIXTURES / "incremental" / "method_names.py").read_text(encoding="utf-8")
    linter = IncrementalLinter()
    linter.lint(source)
    # `Runner.helper` is called by name from `Runner.forward` only: `Decoder` defines a
    # `helper` too, but its calls never reach Runner's, so only Runner's chunk changes.
    edited = source.replace('print("runner helper")', 'print("runner helper", x)')
    _assert_same(edited, lint_source(edited), linter.lint(edited))
    assert linter.relinted == 1
    # Every class has an `_init_weights`: editing Encoder's re-lints Encoder and the
    # functions it calls (whether they are compiled depends on it), no other class.
    edited = edited.replace('print("init encoder")', 'print("init encoder", module)')
    _assert_same(edited, lint_source(edited), linter.lint(edited))
    assert linter.relinted == 4  # Encoder, scale, noisy_loss, step2
    # `noisy_loss` is compiled through `self.loss_fn = noisy_loss`: once the attribute
    # names another function, noisy_loss's print is no break any more.
    assert [f.line for f in lint_source(edited) if f.code == "FG102"].count(21) == 1
    edited = edited.replace("self.loss_fn = noisy_loss", "self.loss_fn = scale")
    findings = linter.lint(edited)
    _assert_same(edited, lint_source(edited), findings)
    assert not [f for f in findings if f.code == "FG102" and f.line == 21]


def test_bench_file_edit_relints_one_block(whole_file_fixes, own_cache) -> None:
    source = _bench_source(120)
    linter = IncrementalLinter("bench.py")
    _assert_same(source, lint_source(source), linter.lint(source), fixes=4)
    edited = source.replace("h = h * 2", "h = h * 5", 1)
    whole, incremental = lint_source(edited), linter.lint(edited)
    assert linter.relinted == 1
    _assert_same(edited, whole, incremental, fixes=4)
    # Every class uses `nn`; an import that binds it the same way changes none of them.
    edited = edited.replace("from torch import nn\n", "from torch import fft, nn\n")
    whole, incremental = lint_source(edited), linter.lint(edited)
    assert linter.relinted == 1
    _assert_same(edited, whole, incremental, fixes=2)
    assert whole_file_fixes() == []


def test_a_subclass_elsewhere_is_seen_when_its_base_class_is_edited(own_cache, monkeypatch) -> None:
    monkeypatch.setattr(incremental, "_GROUP_CHARACTERS", 0)
    source = (FIXTURES / "incremental" / "subclass_rebuilds.py").read_text(encoding="utf-8")
    linter = IncrementalLinter()
    linter.lint(source)
    edited = source.replace("nn.Embedding(10, 4)", "nn.Embedding(10, 4, padding_idx=0)")
    findings = linter.lint(edited)
    _assert_same(edited, lint_source(edited), findings)
    (finding,) = [f for f in findings if f.code == "FG101"]
    assert "left alone by its subclasses" in finding.refusal_reason


def test_a_document_opened_again_is_not_linted_again(own_cache) -> None:
    source = (FIXTURES / "incremental" / "cross_chunk.py").read_text(encoding="utf-8")
    first = IncrementalLinter("a.py")
    expected = [_visible(f) for f in first.lint(source)]
    assert first.relinted > 0
    again = IncrementalLinter("a.py")
    assert [_visible(f) for f in again.lint(source)] == expected
    assert again.relinted == 0


def test_a_fix_applies_to_the_text_it_was_found_in() -> None:
    source = (FIXTURES / "incremental" / "cross_chunk.py").read_text(encoding="utf-8")
    linter = IncrementalLinter()
    old = [f for f in linter.lint(source) if f.fix is not None]
    linter.lint("# an edit that moves every line\n" + source)
    for finding, expected in zip(old, [f for f in lint_source(source) if f.fix is not None]):
        assert apply_edits(source, finding.fix.edits) == apply_edits(source, expected.fix.edits)
