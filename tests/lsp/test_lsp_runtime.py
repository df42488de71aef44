"""End to end over stdio: runtime analysis of entrypoints through the server's commands.

The server runs the analysis service, which runs user code in a worker
process; these tests check what reaches the editor: diagnostics at the break
with the user call stack, progress notifications, cancellation, the compiled
wrapper as a created file, and that noisy or crashing user code costs one
diagnostic, never the protocol.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsp_helpers import diagnostics, needs_runtime, open_document, uri_of, wait_until, with_code
from lsprotocol import types
from pytest_lsp import LanguageClient

pytestmark = [pytest.mark.asyncio, needs_runtime]


async def run_command(client: LanguageClient, command: str, *arguments):
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command, arguments=list(arguments))
    )


def errors_in(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    """The Error diagnostics pushed for ``uri`` (failed analyses; rules never say Error)."""
    return [
        d for d in client.diagnostics.get(uri, []) if d.severity == types.DiagnosticSeverity.Error
    ]


def progress_kinds(client: LanguageClient) -> list[list[str]]:
    return [[value.kind for value in values] for values in client.progress_reports.values()]


async def test_analyze_command_reports_progress_and_break_diagnostics(
    push_client: LanguageClient, workspace: Path
):
    net = workspace / "models/net.py"
    uri = open_document(push_client, net)
    result = await run_command(push_client, "fullgraph.analyze", "models.net:build")
    (summary,) = result["results"]
    assert summary["status"] == "ok" and summary["break_count"] >= 1
    assert ["begin", "report", "report", "end"] in progress_kinds(push_client)
    (finished,) = push_client.finished_analyses
    assert (finished.entry, finished.status) == ("models.net:build", "ok")
    assert finished.graphs == summary["graph_count"] >= 1
    assert finished.breaks == summary["break_count"]

    def runtime_breaks():
        return [d for d in push_client.diagnostics.get(uri, []) if d.code == "FG201"]

    (brk,) = await wait_until(runtime_breaks, what="the FG201 diagnostic")
    # print("é 𝔵 shape", x.sum()) on line 13: code points 8..35, UTF-16 8..36.
    assert brk.range == types.Range(
        start=types.Position(line=12, character=8), end=types.Position(line=12, character=36)
    )
    assert brk.code_description.href.endswith("docs/codes/FG201.md")
    assert brk.related_information and brk.related_information[0].location.uri == uri
    assert brk.related_information[0].message == "1. Net.forward"

    hover = await push_client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=12, character=9),
        )
    )
    text = hover.contents.value
    assert "FG201" in text and f"{summary['graph_count']} graph(s)" in text
    assert "def guard(" in text and "`Net.forward`" in text  # the frame with its class

    # The analysed function and its class now have lenses that run this entrypoint.
    lenses = await push_client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    analyze = {
        lens.range.start.line: lens.command for lens in lenses if lens.command.title == "Analyze"
    }
    assert list(analyze[6].arguments) == ["models.net:build"]  # class Net
    assert list(analyze[11].arguments) == ["models.net:build"]  # def forward


async def test_entrypoint_printing_to_stdout_does_not_break_the_protocol(
    push_client: LanguageClient, workspace: Path
):
    noisy = workspace / "models/noisy.py"
    uri = open_document(push_client, noisy)
    result = await run_command(push_client, "fullgraph.analyze", "models.noisy:build")
    assert result["results"][0]["status"] == "ok"
    await wait_until(
        lambda: any(d.code == "FG201" for d in push_client.diagnostics.get(uri, [])),
        what="noisy diagnostics",
    )
    # The connection still carries requests both ways.
    lenses = await push_client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert {lens.command.title for lens in lenses} >= {"Compile this function"}
    assert push_client.error is None


async def test_crashing_entrypoint_becomes_one_diagnostic_and_the_server_keeps_serving(
    push_client: LanguageClient, workspace: Path
):
    crash = workspace / "models/crash.py"
    uri = open_document(push_client, crash)
    result = await run_command(push_client, "fullgraph.analyze", "models.crash:build")
    assert result["results"][0]["status"] == "crashed"
    (crashed,) = await wait_until(lambda: errors_in(push_client, uri), what="the crash diagnostic")
    assert "crashed" in crashed.message and crashed.range.start.line == 5  # def build()
    assert any("crashed" in m.message for m in push_client.messages)
    # A user exception lands on the line that raised.
    result = await run_command(push_client, "fullgraph.analyze", "models.crash:build_raises")
    assert result["results"][0]["status"] == "user_exception"
    await wait_until(
        lambda: any(
            "the builder failed on purpose" in d.message and d.range.start.line == 10
            for d in push_client.diagnostics.get(uri, [])
        ),
        what="the user-exception diagnostic",
    )
    # Still serving.
    result = await run_command(push_client, "fullgraph.analyze", "models.net:build")
    assert result["results"][0]["status"] == "ok"


async def test_progress_cancel_stops_a_long_analysis(push_client: LanguageClient, workspace: Path):
    command = asyncio.ensure_future(
        run_command(push_client, "fullgraph.analyze", "models.slow:build")
    )
    tokens = await wait_until(
        lambda: [
            t
            for t, values in push_client.progress_reports.items()
            if values and values[0].kind == "begin"
        ],
        what="progress to begin",
    )
    (token,) = tokens
    assert push_client.progress_reports[token][0].cancellable is True
    await asyncio.sleep(1.0)  # let the worker start the entrypoint
    push_client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    result = await asyncio.wait_for(command, timeout=60)
    assert result["results"][0]["status"] == "cancelled"
    assert push_client.progress_reports[token][-1].kind == "end"


async def test_compile_function_creates_the_wrapper_through_the_client(
    push_client: LanguageClient, workspace: Path
):
    result = await run_command(push_client, "fullgraph.compileFunction", "models.net:build")
    tool_errors = [m.message for m in push_client.messages if "inside fullgraph" in m.message]
    if result["source"] is None and tool_errors:
        # The runtime's wrapper generator (issue 4) reported its own failure; the
        # server did its part (it survived and told the user).
        pytest.skip(f"the runtime cannot generate this wrapper yet: {tool_errors[0]}")
    assert result["applied"] is True
    assert "def guard" in result["source"]
    (request,) = push_client.applied_edits
    create, insert = request.edit.document_changes
    assert create.kind == "create" and create.uri.endswith(
        ".fullgraph/compiled/models_net_build_compiled.py"
    )
    assert insert.edits[0].new_text == result["source"]
    assert not (workspace / ".fullgraph").exists()  # the client writes files, not the server


async def test_add_entrypoint_edits_pyproject_and_analyses(
    push_client: LanguageClient, workspace: Path
):
    result = await run_command(push_client, "fullgraph.addEntrypoint", "models.noisy:build")
    assert result["added"] and result["applied"]
    (request,) = push_client.applied_edits
    (change,) = request.edit.document_changes or [None]
    new_text = (
        change.edits[0].new_text
        if change
        else request.edit.changes[uri_of(workspace / "pyproject.toml")][0].new_text
    )
    assert 'entrypoints = ["models.net:build", "models.noisy:build"]' in new_text
    assert "# The workspace the language-server tests open" in new_text  # comments kept
    assert result["results"][0]["status"] == "ok"


async def test_runtime_off_runs_no_user_code(push_client: LanguageClient, workspace: Path):
    push_client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"fullgraph": {"diagnostics": {"runtime": False}}}
        )
    )
    result = await run_command(push_client, "fullgraph.analyze", "models.crash:build")
    assert result["results"] == []
    assert any("runtime analysis is off" in m.message for m in push_client.messages)
    assert push_client.finished_analyses == []


async def test_saving_a_file_analyses_the_configured_entrypoints(
    push_client: LanguageClient, workspace: Path
):
    uri = open_document(push_client, workspace / "models/net.py")
    push_client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    # Runtime findings arrive next to the static ones (whichever finishes first).
    await wait_until(
        lambda: {"FG201", "FG102"} <= {d.code for d in push_client.diagnostics.get(uri, [])},
        timeout=120,
        what="runtime and static diagnostics after a save",
    )
    # The server publishes the diagnostics first, then announces the finished analysis.
    await wait_until(
        lambda: push_client.finished_analyses,
        timeout=30,
        what="fullgraph/analysisFinished after the runtime diagnostics",
    )
    assert [f.entry for f in push_client.finished_analyses] == ["models.net:build"]


async def test_timeout_becomes_one_error_diagnostic(push_client: LanguageClient, workspace: Path):
    push_client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"fullgraph": {"timeout": 3}})
    )
    uri = open_document(push_client, workspace / "models/slow.py")
    result = await run_command(push_client, "fullgraph.analyze", "models.slow:build")
    assert result["results"][0]["status"] == "timeout"
    (timed_out,) = await wait_until(
        lambda: errors_in(push_client, uri), what="the timeout diagnostic"
    )
    assert "timed out" in timed_out.message and timed_out.range.start.line == 5  # def build()


async def test_runtime_breaks_reach_pushing_and_pulling_clients(
    client: LanguageClient, workspace: Path
):
    uri = open_document(client, workspace / "models/net.py")
    result = await run_command(client, "fullgraph.analyze")  # every configured entrypoint
    assert [r["entry"] for r in result["results"]] == ["models.net:build"]
    # Static and runtime findings side by side.
    await diagnostics(
        client, uri, lambda items: with_code(items, "FG201") and with_code(items, "FG102")
    )
