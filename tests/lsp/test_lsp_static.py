"""End to end over stdio: static diagnostics, hover, quick fixes, code lenses, settings."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_helpers import diagnostics, encoding, needs_refactors, open_document, wait_until, with_code
from lsprotocol import types
from pygls.workspace import TextDocument
from pygls.workspace.position_codec import PositionCodec
from pytest_lsp import LanguageClient

pytestmark = [pytest.mark.asyncio, needs_refactors]

PRINT_LINE = 12  # 0-based line of the print() in models/net.py


def apply_edits(text: str, edits: list[types.TextEdit], encoding_name: str) -> str:
    """Apply edits the way a client does, with pygls' own document model."""
    document = TextDocument("file:///scratch.py", text, position_codec=PositionCodec(encoding_name))
    ordered = sorted(
        edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True
    )
    for edit in ordered:
        document.apply_change(
            types.TextDocumentContentChangePartial(range=edit.range, text=edit.new_text)
        )
    return document.source


def edits_for(edit: types.WorkspaceEdit, uri: str) -> list[types.TextEdit]:
    if edit.document_changes:
        return [
            e
            for change in edit.document_changes
            if change.text_document.uri == uri
            for e in change.edits
        ]
    return list(edit.changes[uri])


async def test_open_reports_rule_codes_and_ranges_in_the_client_encoding(
    client: LanguageClient, workspace: Path
):
    uri = open_document(client, workspace / "models/net.py")
    items = await diagnostics(client, uri, lambda items: with_code(items, "FG102"))
    (printed,) = with_code(items, "FG102")
    # `print("é 𝔵 shape", x.sum())` spans code points 8..35; é is 2 UTF-8 bytes
    # and 𝔵 is 2 UTF-16 units or 4 UTF-8 bytes.
    expected_end = {"utf-16": 36, "utf-8": 39, "utf-32": 35}[encoding(client)]
    assert printed.range == types.Range(
        start=types.Position(line=PRINT_LINE, character=8),
        end=types.Position(line=PRINT_LINE, character=expected_end),
    )
    assert printed.source == "fullgraph"
    assert printed.severity == types.DiagnosticSeverity.Warning
    assert printed.code_description.href.endswith("docs/rules/FG102.md")


async def test_hover_on_a_finding_explains_it(client: LanguageClient, workspace: Path):
    uri = open_document(client, workspace / "models/net.py")
    await diagnostics(client, uri, lambda items: with_code(items, "FG102"))
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=PRINT_LINE, character=10),
        )
    )
    assert hover is not None
    assert hover.contents.kind == types.MarkupKind.Markdown
    assert "FG102" in hover.contents.value and "Quick fix available" in hover.contents.value
    nothing = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=0, character=0),
        )
    )
    assert nothing is None


async def test_quick_fix_edit_removes_the_diagnostic(client: LanguageClient, workspace: Path):
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
    (fix,) = [
        action
        for action in actions
        if action.kind == types.CodeActionKind.QuickFix and "disable" not in action.title
    ]
    assert "FG101" in fix.title and fix.diagnostics[0].code == "FG101"
    fixed = apply_edits(text, edits_for(fix.edit, uri), encoding(client))
    assert "torch.where(x.sum() > 0, x * 2, x - 1)" in fixed
    compile(fixed, "gate.py", "exec")  # still Python
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)],
        )
    )
    items = await diagnostics(client, uri, lambda items: not with_code(items, "FG101"))
    assert with_code(items, "FG103"), "the other finding stays"
    assert path.read_text() == text  # the server proposed the edit; it never wrote the file


async def test_fix_all_is_offered_as_a_source_action(client: LanguageClient, workspace: Path):
    path = workspace / "models/gate.py"
    uri = open_document(client, path)
    await diagnostics(client, uri, lambda items: with_code(items, "FG101"))
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(
                start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)
            ),
            context=types.CodeActionContext(
                diagnostics=[], only=[types.CodeActionKind.SourceFixAll]
            ),
        )
    )
    (fix_all,) = actions
    assert fix_all.kind == "source.fixAll.fullgraph"
    fixed = apply_edits(path.read_text(), edits_for(fix_all.edit, uri), encoding(client))
    # Both rewrites at once: the branch became a select, the assert an in-graph
    # check that keeps its (non-ASCII) message.
    assert "torch.where(" in fixed and "if x.sum() > 0:" not in fixed
    assert "assert (y >= -10)" not in fixed and '"ÿ out of range"' in fixed
    compile(fixed, "gate.py", "exec")


async def test_syntax_error_keeps_findings_of_untouched_lines(
    client: LanguageClient, workspace: Path
):
    path = workspace / "models/net.py"
    text = path.read_text()
    uri = open_document(client, path, text)
    await diagnostics(client, uri, lambda items: with_code(items, "FG102"))
    broken = "def half_typed(:\n" + text  # shifts every line down by one
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=broken)],
        )
    )
    items = await diagnostics(
        client, uri, lambda items: any("cannot parse" in item.message for item in items)
    )
    (kept,) = with_code(items, "FG102")
    assert kept.range.start.line == PRINT_LINE + 1
    # The server is still alive and answers requests.
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert list(lenses) == []  # nothing to anchor lenses on until the file parses again


async def test_a_syntax_error_is_fg001_with_its_doc_link(client: LanguageClient, workspace: Path):
    """The editor reports a file that does not parse with the code check and SARIF use."""
    path = workspace / "models/broken.py"
    path.write_text("import torch\n\n\ndef forward(self, x):\n    return self.fc(x\n")
    uri = open_document(client, path)
    items = await diagnostics(
        client, uri, lambda items: any("cannot parse" in item.message for item in items)
    )
    (syntax,) = [item for item in items if "cannot parse" in item.message]
    assert syntax.code == "FG001"
    assert syntax.code_description.href.endswith("docs/codes/FG001.md")
    assert syntax.severity == types.DiagnosticSeverity.Information


async def test_code_lenses_on_functions_and_modules(client: LanguageClient, workspace: Path):
    uri = open_document(client, workspace / "models/net.py")
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    by_line: dict[int, list[types.Command]] = {}
    for lens in lenses:
        by_line.setdefault(lens.range.start.line, []).append(lens.command)
    assert sorted(by_line) == [6, 11, 16]  # class Net, forward, build (not __init__)
    build = {command.title: command for command in by_line[16]}
    assert build["Analyze"].command == "fullgraph.analyze"
    assert list(build["Analyze"].arguments) == ["models.net:build"]
    assert build["Compile this function"].command == "fullgraph.compileFunction"
    assert list(build["Compile this function"].arguments) == ["models.net:build"]


async def test_bad_settings_are_shown_and_defaults_used(
    misconfigured_client: LanguageClient, workspace: Path
):
    messages = await wait_until(
        lambda: misconfigured_client.messages, what="a showMessage about the settings"
    )
    text = "\n".join(message.message for message in messages)
    assert "`debounceMs` = 'fast' is invalid (expected a non-negative whole number" in text
    assert "`timeout` = -5 is invalid (expected a positive number of seconds)" in text
    assert "`ignore` = 'FG102' is invalid (expected a list of strings)" in text
    # A misspelt key is named, with the known ones, and otherwise ignored.
    assert "client settings: unknown setting `runOnSafe` ignored (known settings: " in text
    assert "run_on_save" in text
    # The defaults apply: FG102 is not ignored, diagnostics still flow.
    uri = open_document(misconfigured_client, workspace / "models/net.py")
    await diagnostics(misconfigured_client, uri, lambda items: with_code(items, "FG102"))


async def test_client_settings_change_is_applied(client: LanguageClient, workspace: Path):
    uri = open_document(client, workspace / "models/net.py")
    await diagnostics(client, uri, lambda items: with_code(items, "FG102"))
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"fullgraph": {"ignore": ["FG102"]}})
    )
    await diagnostics(client, uri, lambda items: not with_code(items, "FG102"))


async def test_incremental_edits_move_the_findings(client: LanguageClient, workspace: Path):
    uri = open_document(client, workspace / "models/net.py")
    await diagnostics(client, uri, lambda items: with_code(items, "FG102"))
    start = types.Position(line=0, character=0)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(start=start, end=start), text="# é𝔵 two new lines\n\n"
                )
            ],
        )
    )
    items = await diagnostics(
        client,
        uri,
        lambda items: [
            d for d in with_code(items, "FG102") if d.range.start.line == PRINT_LINE + 2
        ],
    )
    (moved,) = with_code(items, "FG102")
    assert moved.range.start.character == 8
