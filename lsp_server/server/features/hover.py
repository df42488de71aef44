"""Hover: what is wrong at a flagged range, and what to do about it, in Markdown.

Runtime breaks show the reason, the hint, the user call stack, the
entrypoint's graph count and the guard a later call would check (prepared
when the report arrived, see :mod:`.runtime`); static findings show the
rule, whether a safe fix exists (or why it was refused) and the doc link.
"""

from __future__ import annotations

from lsprotocol import types

from fullgraph.lsp_server.diagnostic import Diagnostic
from fullgraph.lsp_server.positions import contains
from fullgraph.lsp_server.server.features.diagnostics import refresh_static, runtime_findings_for
from fullgraph.lsp_server.server.features.findings import doc_href
from fullgraph.lsp_server.server.language_server import FullgraphServer, path_of
from fullgraph.lsp_server.server.registry import feature


def static_hover(finding: Diagnostic, href: str | None) -> str:
    """Markdown for hovering a static finding."""
    title = f"**{finding.code}**" + (f" {finding.rule_name}" if finding.rule_name else "")
    parts = [f"{title} — {finding.message}"]
    if finding.fix is not None and getattr(finding.fix, "offered", True):
        parts.append(f"**Quick fix available:** {finding.fix.title}")
    elif finding.fix is not None:  # a notebook cell's fix that cannot be placed
        parts.append(
            f"**No quick fix in this notebook:** {finding.fix.title} would edit across cells, "
            "an IPython magic line, or a cell after this one (an import it needs would land "
            "there: move the notebook's imports to its first cell)"
        )
    elif finding.hint:  # why the rule offers no fix
        parts.append(f"**No automatic fix:** {finding.hint}")
    if href:
        parts.append(f"[Documentation for {finding.code}]({href})")
    return "\n\n".join(parts)


def hover_text(server: FullgraphServer, uri: str, position: types.Position) -> str | None:
    """The Markdown for everything flagged at ``position`` in ``uri``, or None."""
    text = server.document_text(uri)
    if text is None:
        return None
    mapper = server.mapper(text)
    sections = []
    state = server.documents.get(uri)
    if state is not None and state.text == text:
        for finding in state.findings:
            if contains(mapper.range_of(finding), position):
                href = doc_href(finding.code, server.root, server.settings.docs_base_url)
                sections.append(static_hover(finding, href))
    path = path_of(uri)
    if path is not None:
        for finding in runtime_findings_for(server, path, text):
            if contains(mapper.range_of(finding), position):
                sections.append(finding.hover or finding.message)
    return "\n\n---\n\n".join(sections) if sections else None


@feature(types.TEXT_DOCUMENT_HOVER)
async def hover(server: FullgraphServer, params: types.HoverParams) -> types.Hover | None:
    """Explain the fullgraph findings under the cursor."""
    await refresh_static(server, params.text_document.uri)
    markdown = hover_text(server, params.text_document.uri, params.position)
    if markdown is None:
        return None
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=markdown))
