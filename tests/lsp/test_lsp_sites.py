"""End to end over stdio: runtime findings one per site, named callers, fitting hints,
and "Analyze" on a submodule's forward.

The workspace is tests/cli/projects/kinds: ``Block.forward`` reads tensor data
four ways (assert, f-string, if, ``.item()`` arithmetic) and two entrypoints
reach it, ``build_model`` (through ``Model.forward``) and ``build_block``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lsp_helpers import needs_runtime, open_document, uri_of, wait_until
from lsprotocol import types
from pytest_lsp import LanguageClient

from fullgraph.lsp_server.break_hints import HINTS

pytestmark = [pytest.mark.asyncio, needs_runtime]

KINDS = Path(__file__).resolve().parents[1] / "cli" / "projects" / "kinds"
ENTRIES = ["kinds.blocks:build_model", "kinds.blocks:build_block"]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A private copy of the kinds project (overrides conftest's workspace)."""
    root = tmp_path / "kinds"
    shutil.copytree(KINDS, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def position_of(path: Path, needle: str) -> types.Position:
    for number, text in enumerate(path.read_text().splitlines()):
        if needle in text:
            return types.Position(line=number, character=text.index(needle))
    raise AssertionError(needle)


async def run_command(client: LanguageClient, command: str, *arguments):
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command, arguments=list(arguments))
    )


def runtime_diagnostics(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    return [d for d in client.diagnostics.get(uri, []) if str(d.code).startswith("FG2")]


async def test_analyze_on_a_submodules_forward_runs_the_entrypoints_that_reach_it(
    push_client: LanguageClient, workspace: Path
):
    blocks = workspace / "kinds" / "blocks.py"
    uri = open_document(push_client, blocks)
    # What the "Analyze" lens above `def forward` of Block sends before any analysis.
    result = await run_command(
        push_client, "fullgraph.analyze", {"uri": uri, "qualname": "Block.forward"}
    )
    assert result["unreached"] == []
    assert sorted(r["entry"] for r in result["results"]) == sorted(ENTRIES)
    assert all(r["status"] == "ok" for r in result["results"]), result

    # Now known: the lens on Block.forward runs an entrypoint, and so does a second click.
    lenses = await push_client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    forward_line = position_of(blocks, "def forward(self, x):").line
    (analyze,) = [
        lens.command
        for lens in lenses
        if lens.range.start.line == forward_line and lens.command.title == "Analyze"
    ]
    assert analyze.arguments[0] in ENTRIES
    again = await run_command(
        push_client, "fullgraph.analyze", {"uri": uri, "qualname": "Block.forward"}
    )
    assert sorted(r["entry"] for r in again["results"]) == sorted(ENTRIES)

    # One diagnostic per site, though two entrypoints reached each one.
    found = await wait_until(
        lambda: (
            len(runtime_diagnostics(push_client, uri)) >= 4
            and runtime_diagnostics(push_client, uri)
        ),
        what="the runtime diagnostics of Block.forward",
    )
    sites = [(d.code, d.range.start.line, d.range.start.character) for d in found]
    assert len(sites) == len(set(sites)), sites
    assert_at = position_of(blocks, "h.abs().max() < 1e6")
    (on_assert,) = [d for d in found if d.range.start == assert_at and d.code == "FG202"]
    assert sorted(on_assert.data["entries"]) == sorted(ENTRIES)
    chains = [info.message for info in on_assert.related_information]
    assert chains == ["1. Model.forward", "2. Model.forward → Block.forward"]

    # The hover gives the advice for each kind of read, and names both entrypoints.  The
    # f-string's read is hovered at its formatted expression: Python 3.12 places the read
    # there, 3.11 at the whole f-string.
    for needle, kind in {
        "h.abs().max() < 1e6": "assert",
        "h.sum()": "f-string",
        "h.mean() > 0": "branch",
        "h.max().item()": "item-arithmetic",
    }.items():
        hover = await push_client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri_of(blocks)),
                position=position_of(blocks, needle),
            )
        )
        text = hover.contents.value
        assert f"**Hint:** {HINTS[kind]}" in text, (needle, text)
        assert "Reached as Model.forward → Block.forward" in text
        assert (
            "**Reached from entrypoints** `kinds.blocks:build_model`, `kinds.blocks:build_block`"
        ) in text


async def test_hover_on_a_refused_fix_says_why(push_client: LanguageClient, workspace: Path):
    blocks = workspace / "kinds" / "blocks.py"
    uri = open_document(push_client, blocks)
    builder = position_of(blocks, "build_model():")
    answer = await push_client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=builder)
    )
    # FG106 found no graph to compile in a builder; the hover gives its reason.
    assert "**No automatic fix:** NO_TENSOR_PARAMETERS" in answer.contents.value
