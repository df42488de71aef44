"""Code actions: the refactors' safe fixes as workspace edits.

One quick fix per fixable static finding in the requested range, a
"disable FGxxx for this line" action per static finding there (a
``# fullgraph: ignore[FGxxx]`` comment, :mod:`fullgraph.lsp_server.suppressions`), and
``source.fixAll.fullgraph`` applying every safe fix of the file at once (the
refactors' ``fix_source``).  The server only proposes edits; the client
applies them, so nothing here writes a file.
"""

from __future__ import annotations

import asyncio
from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from fullgraph.lsp_server.diagnostic import Diagnostic
from fullgraph.lsp_server.notebooks import CellFix
from fullgraph.lsp_server.positions import PositionMapper, overlaps
from fullgraph.lsp_server.server.features.diagnostics import refresh_static
from fullgraph.lsp_server.server.features.edits import workspace_edit
from fullgraph.lsp_server.server.features.findings import to_diagnostic
from fullgraph.lsp_server.server.features.notebook_cells import cell_edit, fix_all_edit
from fullgraph.lsp_server.server.features.notebook_lint import notebook_of_cell
from fullgraph.lsp_server.server.language_server import FullgraphServer, path_of
from fullgraph.lsp_server.server.registry import feature
from fullgraph.lsp_server.suppressions import suppression_edit
from fullgraph.refactors import fix_source

FIX_ALL = "source.fixAll.fullgraph"


def wanted(only: list[str] | None, kind: str) -> bool:
    """Whether ``kind`` was asked for: kinds are hierarchical ("source.fixAll" covers ours)."""
    if not only:
        return True
    return any(kind == requested or kind.startswith(f"{requested}.") for requested in only)


def fix_edits(fix: Any, mapper: PositionMapper) -> list[types.TextEdit]:
    """A refactors Fix as LSP text edits (same coordinates as its finding)."""
    return [
        types.TextEdit(range=mapper.range_of(edit), new_text=edit.new_text) for edit in fix.edits
    ]


def quick_fixes(
    server: FullgraphServer,
    uri: str,
    text: str,
    findings: list[Diagnostic],
    requested: types.Range,
) -> list[types.CodeAction]:
    mapper = server.mapper(text)
    actions = []
    for finding in findings:
        if not overlaps(mapper.range_of(finding), requested):
            continue
        actions += disable_actions(server, uri, text, finding, mapper)
        if finding.fix is None:
            continue
        if isinstance(finding.fix, CellFix):
            notebook = server.notebooks.get(notebook_of_cell(server, uri) or "")
            edit = cell_edit(server, notebook, finding.fix) if notebook else None
            if edit is None:
                continue  # the hover says why
        else:
            edit = workspace_edit(server, uri, fix_edits(finding.fix, mapper))
        diagnostic = to_diagnostic(
            finding, mapper, root=server.root, docs_base_url=server.settings.docs_base_url
        )
        actions.append(
            types.CodeAction(
                title=f"{finding.fix.title} ({finding.code})",
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[diagnostic],
                is_preferred=True,
                edit=edit,
            )
        )
    return actions


def disable_actions(
    server: FullgraphServer, uri: str, text: str, finding: Diagnostic, mapper: PositionMapper
) -> list[types.CodeAction]:
    """ "Disable FGxxx for this line": a suppression comment on the finding's first line."""
    edit = suppression_edit(text, finding.line, finding.code)
    if edit is None:
        return []
    diagnostic = to_diagnostic(
        finding, mapper, root=server.root, docs_base_url=server.settings.docs_base_url
    )
    text_edit = types.TextEdit(range=mapper.range_of(edit), new_text=edit.new_text)
    return [
        types.CodeAction(
            title=f"fullgraph: disable {finding.code} for this line",
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[diagnostic],
            is_preferred=False,
            edit=workspace_edit(server, uri, [text_edit]),
        )
    ]


def fix_all_action(
    server: FullgraphServer, uri: str, text: str, fixed: str
) -> types.CodeAction | None:
    if fixed == text:
        return None
    edit = types.TextEdit(range=server.mapper(text).whole_document(), new_text=fixed)
    return types.CodeAction(
        title="fullgraph: apply all safe fixes",
        kind=FIX_ALL,
        edit=workspace_edit(server, uri, [edit]),
    )


async def notebook_fix_all(server: FullgraphServer, notebook_uri: str) -> list:
    """ "Apply all safe fixes" for the whole notebook, as whole-cell replacements."""
    state = server.notebooks.get(notebook_uri)
    if state is None or state.combined is None:
        return []
    path = to_fs_path(notebook_uri) or notebook_uri
    loop = asyncio.get_running_loop()
    fixed = await loop.run_in_executor(server.thread_pool, fix_source, state.combined.text, path)
    edit = fix_all_edit(server, state, fixed)
    if edit is None:
        return []
    return [types.CodeAction(title="fullgraph: apply all safe fixes", kind=FIX_ALL, edit=edit)]


@feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL], resolve_provider=False
    ),
)
async def code_action(
    server: FullgraphServer, params: types.CodeActionParams
) -> list[types.CodeAction] | None:
    """Offer the safe fixes for the requested range, and fix-all for the file."""
    uri = params.text_document.uri
    state = await refresh_static(server, uri)
    text = server.document_text(uri)
    if state is None or text is None or state.text != text or state.syntax_error is not None:
        return None
    only = [getattr(kind, "value", kind) for kind in params.context.only or []]
    actions = (
        quick_fixes(server, uri, text, state.findings, params.range)
        if wanted(only, "quickfix")
        else []
    )
    notebook_uri = notebook_of_cell(server, uri)
    if wanted(only, FIX_ALL) and any(f.fix for f in state.findings):
        path = path_of(uri)
        loop = asyncio.get_running_loop()
        if notebook_uri is not None:
            actions += await notebook_fix_all(server, notebook_uri)
            return actions or None
        fixed = await loop.run_in_executor(server.thread_pool, fix_source, text, str(path or uri))
        action = fix_all_action(server, uri, text, fixed)
        actions += [action] if action else []
    return actions or None
