""" "Disable FGxxx for this line": the code action, and the comment the static rules then read."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_helpers import diagnostics, encoding, needs_refactors, open_document, with_code
from lsprotocol import types
from pytest_lsp import LanguageClient
from test_lsp_static import apply_edits, edits_for

from fullgraph.lsp_server.suppressions import suppression_edit


def applied(text: str, line: int, code: str) -> str | None:
    edit = suppression_edit(text, line, code)
    if edit is None:
        return None
    lines = text.split("\n")
    target = lines[line - 1]
    lines[line - 1] = target[: edit.column] + edit.new_text + target[edit.end_column :]
    return "\n".join(lines)


@needs_refactors
def test_the_comment_is_the_syntax_the_rules_read():
    from fullgraph.refactors.suppression import find_suppressions

    text = "if x.sum() > 0:   \n    y = 1\n"
    fixed = applied(text, 1, "FG101")
    assert fixed.splitlines()[0] == "if x.sum() > 0:  # fullgraph: ignore[FG101]"
    assert find_suppressions(fixed) == {1: frozenset({"FG101"})}
    # A second code joins the existing list; a code already there offers nothing.
    twice = applied(fixed, 1, "FG103")
    assert twice.splitlines()[0] == "if x.sum() > 0:  # fullgraph: ignore[FG101, FG103]"
    assert find_suppressions(twice) == {1: frozenset({"FG101", "FG103"})}
    assert suppression_edit(twice, 1, "FG101") is None
    # After another comment: still read (the rules search the whole comment).
    other = applied("print(x)  # noqa: T201\n", 1, "FG102")
    assert find_suppressions(other) == {1: frozenset({"FG102"})}


def test_no_comment_where_it_would_change_the_code():
    assert suppression_edit('s = """start\nprint(x)\n"""\n', 1, "FG102") is None  # in a string
    assert suppression_edit("y = x + \\\n    1\n", 1, "FG101") is None  # continuation


@pytest.mark.asyncio
@needs_refactors
async def test_disable_for_this_line_silences_only_that_finding(
    client: LanguageClient, workspace: Path
):
    path = workspace / "models/gate.py"
    text = path.read_text()
    uri = open_document(client, path, text)
    items = await diagnostics(client, uri, lambda items: with_code(items, "FG101"))
    (branch,) = with_code(items, "FG101")
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=branch.range,
            context=types.CodeActionContext(
                diagnostics=[branch], only=[types.CodeActionKind.QuickFix]
            ),
        )
    )
    (disable,) = [a for a in actions if a.title == "fullgraph: disable FG101 for this line"]
    assert disable.kind == types.CodeActionKind.QuickFix and not disable.is_preferred
    fixed = apply_edits(text, edits_for(disable.edit, uri), encoding(client))
    line = fixed.splitlines()[branch.range.start.line]
    assert line == "        if x.sum() > 0:  # fullgraph: ignore[FG101]"
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)],
        )
    )
    items = await diagnostics(client, uri, lambda items: not with_code(items, "FG101"))
    assert with_code(items, "FG103"), "the other line's finding stays"
    assert path.read_text() == text  # an edit for the editor; the file is untouched
