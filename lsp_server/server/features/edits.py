"""Workspace edits the features propose (no LSP registration): the client applies them.

Versioned ``documentChanges`` when the client supports them, else plain
``changes``; the server itself never writes a user's file.
"""

from __future__ import annotations

from lsprotocol import types

from fullgraph.lsp_server.server.language_server import FullgraphServer


def workspace_edit(
    server: FullgraphServer, uri: str, edits: list[types.TextEdit]
) -> types.WorkspaceEdit:
    """Edits to one document, versioned when the client supports document changes."""
    return multi_document_edit(server, {uri: edits})


def multi_document_edit(
    server: FullgraphServer, edits: dict[str, list[types.TextEdit]]
) -> types.WorkspaceEdit:
    """Edits to several documents (a notebook's cells) in one workspace edit."""
    if server.supports_document_changes:
        return types.WorkspaceEdit(
            document_changes=[
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(
                        uri=uri, version=server.document_version(uri)
                    ),
                    edits=document_edits,
                )
                for uri, document_edits in edits.items()
            ]
        )
    return types.WorkspaceEdit(changes=dict(edits))


def replace_document_edit(
    server: FullgraphServer, uri: str, old_text: str, new_text: str
) -> types.WorkspaceEdit:
    """A workspace edit that replaces the whole of ``uri`` with ``new_text``."""
    edit = types.TextEdit(range=server.mapper(old_text).whole_document(), new_text=new_text)
    return workspace_edit(server, uri, [edit])


def create_file_edit(uri: str, text: str) -> types.WorkspaceEdit:
    """A workspace edit that creates (or overwrites) ``uri`` holding ``text``."""
    start = types.Position(line=0, character=0)
    return types.WorkspaceEdit(
        document_changes=[
            types.CreateFile(uri=uri, options=types.CreateFileOptions(overwrite=True)),
            types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=None),
                edits=[types.TextEdit(range=types.Range(start=start, end=start), new_text=text)],
            ),
        ]
    )
