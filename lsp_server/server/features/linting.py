"""The static rules on one open text document, as the user types (no LSP registration).

Each open document keeps a refactors ``IncrementalLinter``: the first lint of
a file runs every rule, later ones only on the top-level statements an edit
reached (with the same findings as ``lint_source``).  When the text does not
parse, the last good findings are carried over to the lines the edit did not
touch, next to one information diagnostic saying why (:func:`advance`).
Linting runs in a worker thread, one lint per document at a time
(:func:`refresh_file`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from pathlib import Path

from fullgraph.lsp_server.diagnostic import Diagnostic
from fullgraph.lsp_server.server.features.findings import carry_over
from fullgraph.lsp_server.server.language_server import FullgraphServer, path_of
from fullgraph.lsp_server.server.state import DocumentState, SyntaxProblem
from fullgraph.refactors import RULES, IncrementalLinter, SourceSyntaxError, workspace_entrypoints

log = logging.getLogger(__name__)


def lint(
    linter: IncrementalLinter, text: str, ignore: list[str]
) -> tuple[list[Diagnostic], SourceSyntaxError | None]:
    """Run the static rules through ``linter``: (findings, None) or ([], the syntax error)."""
    try:
        raw = linter.lint(text)
    except SourceSyntaxError as error:
        return [], error
    return [Diagnostic.from_finding(f, rules=RULES) for f in raw if f.code not in ignore], None


def document_linter(state: DocumentState, path: str, entrypoints: dict) -> IncrementalLinter:
    """The document's incremental linter, reused while its path and entrypoints stay.

    ``entrypoints``: functions of the file that compiled code elsewhere calls; a
    new set (another file was saved) starts a new linter.
    """
    linter = state.linter
    if (
        not isinstance(linter, IncrementalLinter)
        or linter.path != path
        or linter.entrypoints != tuple(entrypoints)
    ):
        linter = IncrementalLinter(path, entrypoints=entrypoints)
    return linter


def called_from_elsewhere(server: FullgraphServer, path: Path | None) -> dict:
    """Functions of ``path`` that a compiled function of another workspace file calls
    (as saved on disk), each with the reason: their prints break that graph too."""
    if path is None or path.suffix != ".py":
        return {}
    try:
        return server.workspace_calls().of([path], workspace_entrypoints).get(path.resolve(), {})
    except Exception:  # the scan is a bonus: a failure must not cost the file its lint
        log.exception("reading the workspace's calls into %s failed", path)
        return {}


def advance(
    state: DocumentState,
    text: str,
    findings: list[Diagnostic],
    syntax_error: SyntaxProblem | None,
) -> DocumentState:
    """The document's next state after linting ``text``."""
    if syntax_error is None:
        return DocumentState(text, findings, None, text, findings)
    carried = (
        carry_over(state.good_findings, state.good_text, text)
        if state.good_text is not None
        else []
    )
    return DocumentState(text, carried, syntax_error, state.good_text, state.good_findings)


def compute_static(server: FullgraphServer, uri: str, text: str) -> DocumentState:
    """Lint ``text`` (blocking) and return the document's new state (not yet stored)."""
    state = server.documents.get(uri) or DocumentState()
    if not server.settings.diagnostics_static:
        return DocumentState(text)
    path = path_of(uri)
    where = str(path) if path else uri
    entrypoints = called_from_elsewhere(server, path)
    linter = document_linter(state, where, entrypoints)
    try:
        findings, error = lint(linter, text, server.settings.ignore)
    except Exception as crash:  # a rule bug: keep what we had, say so once per document
        log.exception("static rules failed on %s", uri)
        if uri not in server.lint_failures_reported:
            server.lint_failures_reported.add(uri)
            server.show(
                f"fullgraph: the static rules failed on {path or uri} ({crash!r}); see the log"
            )
        carried = carry_over(state.good_findings, state.good_text, text) if state.good_text else []
        return DocumentState(text, carried, None, state.good_text, state.good_findings, linter)
    return dataclasses.replace(advance(state, text, findings, error), linter=linter)


async def refresh_file(server: FullgraphServer, uri: str) -> DocumentState | None:
    """Bring the static results of an open text document up to date with its text.

    One lint per document at a time: a request that arrives while a lint runs
    waits for it instead of starting another (linting a large file takes a
    while, and parallel runs would only compete for the same CPU).  The
    returned state may belong to an older text when the user kept typing;
    callers compare ``state.text`` with the current text.
    """
    loop = asyncio.get_running_loop()
    while True:
        text = server.document_text(uri)
        if text is None:
            return None
        state = server.documents.get(uri)
        if state is not None and state.text == text:
            return state
        running = server.lints_in_flight.get(uri)
        if running is None:
            break
        await asyncio.shield(running)
        # Awaiting a finished future does not yield to the event loop: give the lint's
        # owner its turn to record the result, or this loop would spin forever.
        await asyncio.sleep(0)
        if server.document_text(uri) != text:  # edited meanwhile: the debounce re-lints
            return server.documents.get(uri)
    running = loop.run_in_executor(server.thread_pool, compute_static, server, uri, text)
    server.lints_in_flight[uri] = running
    try:
        new_state = await asyncio.shield(running)
    finally:
        server.lints_in_flight.pop(uri, None)
    if server.open_document(uri) is not None:
        server.documents[uri] = new_state
    return new_state
