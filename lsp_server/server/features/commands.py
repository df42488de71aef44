"""Commands: ``fullgraph.analyze``, ``fullgraph.compileFunction``, ``fullgraph.addEntrypoint``.

Arguments are JSON values, so each command accepts the shapes a client can
send without knowing our internals: an entry string ``"package.module:fn"``,
an object ``{"entry": ...}``, or (from a code lens on a function that is not
an entrypoint itself) ``{"uri": ..., "qualname": ...}``.

The server never writes user files.  ``compileFunction`` asks the client to
create the wrapper module with ``workspace/applyEdit`` (a ``CreateFile`` plus
an insert) and returns the source either way, so a client that cannot apply
edits still gets it; ``addEntrypoint`` edits ``pyproject.toml`` the same way.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import tomlkit
from lsprotocol import types
from pygls.uris import from_fs_path

from fullgraph.lsp_server.analysis.service import AnalysisResult
from fullgraph.lsp_server.locations import entry_for, split_entry
from fullgraph.lsp_server.server.features.analysis import analyze_entries, compile_entry
from fullgraph.lsp_server.server.features.edits import create_file_edit, replace_document_edit
from fullgraph.lsp_server.server.language_server import FullgraphServer, path_of
from fullgraph.lsp_server.server.registry import command
from fullgraph.lsp_server.server.state import EntryResult

log = logging.getLogger(__name__)

ANALYZE = "fullgraph.analyze"
COMPILE_FUNCTION = "fullgraph.compileFunction"
ADD_ENTRYPOINT = "fullgraph.addEntrypoint"

NO_ENTRYPOINT = (
    "no configured entrypoint reaches {name}. Add a zero-argument function that builds the model "
    "and sample inputs and returns (callable, args) to [tool.fullgraph] entrypoints "
    "(command: fullgraph: Add entrypoint)."
)


# -- pure helpers -------------------------------------------------------------


def entries_reaching(server: FullgraphServer, path: Path, qualname: str) -> list[str]:
    """The configured entrypoints that are, or whose last analysis ran, ``qualname`` of ``path``.

    An analysis runs its own function and the ``forward`` of every submodule
    of the model it is handed, so ``Block.forward`` is reached by the
    entrypoint that builds a ``Model`` holding a ``Block``.
    """
    found = []
    own = entry_for(path, qualname, server.root)
    if own is not None and own in server.settings.entrypoints:
        found.append(own)
    for entry, result in server.entry_results.items():
        if entry not in found and result.reaches(path, qualname):
            found.append(entry)
    return found


def entry_reaching(server: FullgraphServer, path: Path, qualname: str) -> str | None:
    """The first of :func:`entries_reaching` (a code lens runs one), or None."""
    found = entries_reaching(server, path, qualname)
    return found[0] if found else None


def requested_entries(
    server: FullgraphServer, arguments: tuple[Any, ...]
) -> tuple[list[str], list[str]]:
    """(entries to run, names of targets no entrypoint reaches) for command arguments."""
    entries: list[str] = []
    unreached: list[str] = []
    for argument in arguments:
        if isinstance(argument, dict) and "entry" in argument:
            argument = argument["entry"]
        if isinstance(argument, str):
            entries.append(argument)
        elif isinstance(argument, dict) and "uri" in argument and "qualname" in argument:
            path = path_of(str(argument["uri"]))
            found = entries_reaching(server, path, str(argument["qualname"])) if path else []
            if not found:
                unreached.append(str(argument["qualname"]))
            entries += [entry for entry in found if entry not in entries]
    return entries, unreached


def wrapper_path(root: Path, compiled_dir: str, entry: str) -> Path:
    """Where the generated wrapper for ``entry`` goes: one file per entrypoint."""
    module, function = split_entry(entry) or (entry, "")
    stem = "_".join(part for part in (*module.split("."), *function.split(".")) if part)
    return root / compiled_dir / f"{stem}_compiled.py"


def with_entrypoint(pyproject_text: str, entry: str) -> str:
    """``pyproject.toml`` text with ``entry`` in [tool.fullgraph] entrypoints, formatting kept."""
    document = tomlkit.parse(pyproject_text)
    tool = document.get("tool")
    if tool is None:
        tool = tomlkit.table(is_super_table=True)
        document["tool"] = tool
    table = tool.get("fullgraph")
    if table is None:
        table = tomlkit.table()
        tool["fullgraph"] = table
    entrypoints = table.get("entrypoints")
    if entrypoints is None:
        entrypoints = tomlkit.array()
        table["entrypoints"] = entrypoints
    if entry not in entrypoints:
        entrypoints.append(entry)
    return tomlkit.dumps(document)


async def apply(server: FullgraphServer, edit: types.WorkspaceEdit, label: str) -> bool:
    """Ask the client to apply ``edit``; False when it cannot or would not."""
    if not server.supports_apply_edit:
        return False
    try:
        result = await server.workspace_apply_edit_async(
            types.ApplyWorkspaceEditParams(edit=edit, label=label)
        )
    except Exception:  # an error answer means "not applied", not a server failure
        log.info("client failed workspace/applyEdit", exc_info=True)
        return False
    return bool(result and result.applied)


def _summary(result: AnalysisResult | EntryResult) -> dict[str, Any]:
    report = result.report or {}
    return {
        "entry": result.entry,
        "status": result.status,
        "graph_count": report.get("graph_count"),
        "break_count": report.get("break_count"),
        "error": result.error,
        "duration_s": result.duration_s,
    }


# -- commands -----------------------------------------------------------------


@command(ANALYZE)
async def analyze(ls: FullgraphServer, *arguments: Any) -> dict[str, Any]:
    """Analyse the given entrypoints (all configured ones without arguments)."""
    entries, unreached = requested_entries(ls, arguments)
    results = []
    if unreached:
        # Which entrypoints reach a function is learnt by running them: run the
        # configured ones not analysed yet, then look again.
        pending = [e for e in ls.settings.entrypoints if e not in ls.entry_results]
        results = await analyze_entries(ls, pending)
        entries, unreached = requested_entries(ls, arguments)
        ran = {result.entry for result in results}
        results = [result for result in results if result.entry in entries]
        entries = [entry for entry in entries if entry not in ran]
    for name in unreached:
        ls.show("fullgraph: " + NO_ENTRYPOINT.format(name=name), types.MessageType.Info)
    if not arguments:
        entries = list(ls.settings.entrypoints)
        if not entries:
            ls.show(
                "fullgraph: no entrypoints configured in [tool.fullgraph] or the client settings",
                types.MessageType.Info,
            )
    results += await analyze_entries(ls, entries)
    return {"results": [_summary(result) for result in results], "unreached": unreached}


@command(COMPILE_FUNCTION)
async def compile_function(ls: FullgraphServer, *arguments: Any) -> dict[str, Any]:
    """Generate the compiled wrapper for an entrypoint and create it as a file."""
    entries, unreached = requested_entries(ls, arguments)
    if not entries:
        name = unreached[0] if unreached else "the function"
        ls.show("fullgraph: " + NO_ENTRYPOINT.format(name=name), types.MessageType.Info)
        return {"applied": False, "source": None, "error": "no entrypoint"}
    entry = entries[0]
    source = await compile_entry(ls, entry)
    if source is None:
        return {"entry": entry, "applied": False, "source": None, "error": "compilation failed"}
    path = wrapper_path(ls.root, ls.settings.compiled_dir, entry)
    uri = from_fs_path(str(path))
    applied = ls.supports_create_file and await apply(
        ls, create_file_edit(uri, source), f"fullgraph: compile {entry}"
    )
    if not applied:
        ls.show(
            f"fullgraph: generated the wrapper for {entry}; the client did not create {path}",
            types.MessageType.Info,
        )
    return {"entry": entry, "uri": uri, "applied": applied, "source": source}


@command(ADD_ENTRYPOINT)
async def add_entrypoint(ls: FullgraphServer, *arguments: Any) -> dict[str, Any]:
    """Add a function to [tool.fullgraph] entrypoints (via the client) and analyse it."""
    entry = None
    if arguments and isinstance(arguments[0], dict) and "uri" in arguments[0]:
        path = path_of(str(arguments[0]["uri"]))
        entry = entry_for(path, str(arguments[0].get("qualname", "")), ls.root) if path else None
    elif arguments:
        entry = arguments[0]["entry"] if isinstance(arguments[0], dict) else arguments[0]
    if not isinstance(entry, str) or split_entry(entry) is None:
        ls.show(
            f'fullgraph: {entry!r} is not an entrypoint: expected "package.module:function"',
            types.MessageType.Error,
        )
        return {"added": False, "applied": False}
    pyproject = ls.root / "pyproject.toml"
    uri = from_fs_path(str(pyproject))
    old_text = (
        ls.document_text(uri) if pyproject.is_file() or uri in ls.workspace.text_documents else None
    )
    new_text = with_entrypoint(old_text or "", entry)
    if old_text is not None:
        edit = replace_document_edit(ls, uri, old_text, new_text)
    elif ls.supports_create_file:
        edit = create_file_edit(uri, new_text)
    else:
        edit = None
    applied = edit is not None and await apply(ls, edit, f"fullgraph: add entrypoint {entry}")
    if not applied:
        ls.show(
            f"fullgraph: add {entry!r} to [tool.fullgraph] entrypoints in {pyproject} to keep it",
            types.MessageType.Info,
        )
    # Analyse it for this session at once, whether or not the file is saved yet.
    if entry not in ls.added_entrypoints:
        ls.added_entrypoints.append(entry)
    ls.reload_settings()
    results = await analyze_entries(ls, [entry])
    return {
        "added": True,
        "entry": entry,
        "applied": applied,
        "results": [_summary(r) for r in results],
    }
