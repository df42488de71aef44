"""Code lens: "Analyze" and "Compile this function" above functions and nn.Module classes.

An analysis needs inputs, which only an entrypoint (a zero-argument builder)
provides.  So "Analyze" runs the configured entrypoint that is this function
or that last analysed it; on a zero-argument function that is not yet an
entrypoint it offers to add it; elsewhere it explains what is missing.
"""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types

from fullgraph.lsp_server.locations import Definition, definitions, entry_for
from fullgraph.lsp_server.server.features.commands import (
    ADD_ENTRYPOINT,
    ANALYZE,
    COMPILE_FUNCTION,
    entry_reaching,
)
from fullgraph.lsp_server.server.language_server import FullgraphServer, path_of
from fullgraph.lsp_server.server.registry import feature


def worth_a_lens(definition: Definition) -> bool:
    """Skip special methods but ``__call__``: nobody compiles ``__init__`` or ``__repr__``."""
    name = definition.qualname.rsplit(".", 1)[-1]
    special = name.startswith("__") and name.endswith("__")
    return not special or name == "__call__"


def lenses_for(
    server: FullgraphServer, uri: str, path: Path | None, text: str, found: list[Definition]
) -> list[types.CodeLens]:
    """Two lenses per function or nn.Module class of ``text``."""
    mapper = server.mapper(text)
    lenses = []
    for definition in found:
        if not worth_a_lens(definition):
            continue
        where = mapper.range(
            definition.line, definition.column, definition.line, definition.end_column
        )
        target: object = {"uri": uri, "qualname": definition.qualname}
        entry = entry_reaching(server, path, definition.qualname) if path else None
        own = entry_for(path, definition.qualname, server.root) if path else None
        if entry is not None:
            analyze = types.Command(title="Analyze", command=ANALYZE, arguments=[entry])
            target = entry
        elif (
            own is not None
            and definition.kind == "function"
            and definition.required_parameters == 0
        ):
            analyze = types.Command(
                title="Analyze (add as entrypoint)", command=ADD_ENTRYPOINT, arguments=[own]
            )
        else:
            analyze = types.Command(title="Analyze", command=ANALYZE, arguments=[target])
        lenses.append(types.CodeLens(range=where, command=analyze))
        lenses.append(
            types.CodeLens(
                range=where,
                command=types.Command(
                    title="Compile this function", command=COMPILE_FUNCTION, arguments=[target]
                ),
            )
        )
    return lenses


@feature(types.TEXT_DOCUMENT_CODE_LENS)
def code_lens(server: FullgraphServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    """Lenses on every function and nn.Module class of the document."""
    uri = params.text_document.uri
    text = server.document_text(uri)
    if text is None:
        return []
    return lenses_for(server, uri, path_of(uri), text, definitions(text))
