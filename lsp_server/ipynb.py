""".ipynb files: the cells of nbformat 4 JSON, and rewriting only their ``source`` values.

Read with the standard :mod:`json` module (no ``nbformat`` dependency).  A
rewrite replaces the ``source`` value of each changed cell in the JSON text,
laid out as nbformat writes it (one string per line, the original
indentation), and keeps every other byte: outputs, metadata, key order and
layout.  The line map between cells and the linted text is
:mod:`fullgraph.lsp_server.notebooks`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from fullgraph.lsp_server.notebooks import (
    Cell,
    CellFinding,
    NotebookError,
    combine,
    lint_notebook,
)


def _source_text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def read_cells(text: str) -> list[Cell]:
    """The cells of an nbformat 4 notebook (JSON text); :class:`NotebookError` if not one."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise NotebookError(f"not valid JSON ({error})") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise NotebookError("not an nbformat 4 notebook (no list of cells)")
    metadata = data.get("metadata") or {}
    language = (metadata.get("kernelspec") or {}).get("language") or (
        metadata.get("language_info") or {}
    ).get("name", "python")
    python = str(language).lower() == "python"
    return [
        Cell(index, _source_text(cell.get("source")), python and cell.get("cell_type") == "code")
        for index, cell in enumerate(data["cells"])
        if isinstance(cell, dict)
    ]


_SPACE = re.compile(r"[ \t\n\r]*")
_SCALAR = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null")


def _source_spans(text: str) -> dict[int, tuple[int, int]]:
    """cell index -> (start, end) character offsets of ``cells[i]["source"]`` in the JSON text."""
    spans: dict[int, tuple[int, int]] = {}

    def value(pos: int, path: tuple) -> int:
        pos = _SPACE.match(text, pos).end()
        start = pos
        char = text[pos : pos + 1]
        if char == "{":
            pos = _SPACE.match(text, pos + 1).end()
            while text[pos] != "}":
                key, pos = json.decoder.scanstring(text, pos + 1)
                pos = _SPACE.match(text, pos).end() + 1  # past ':'
                pos = _SPACE.match(text, value(pos, (*path, key))).end()
                if text[pos] == ",":
                    pos = _SPACE.match(text, pos + 1).end()
            end = pos + 1
        elif char == "[":
            pos = _SPACE.match(text, pos + 1).end()
            index = 0
            while text[pos] != "]":
                pos = _SPACE.match(text, value(pos, (*path, index))).end()
                index += 1
                if text[pos] == ",":
                    pos = _SPACE.match(text, pos + 1).end()
            end = pos + 1
        elif char == '"':
            end = json.decoder.scanstring(text, pos + 1)[1]
        else:
            end = _SCALAR.match(text, pos).end()
        if len(path) == 3 and path[0] == "cells" and path[2] == "source":
            spans[path[1]] = (start, end)
        return end

    value(0, ())
    return spans


def _source_json(lines: list[str], original: str, ensure_ascii: bool) -> str:
    """``lines`` as a JSON value laid out like ``original`` (nbformat: one line per item)."""
    if not original.startswith("["):
        return json.dumps("".join(lines), ensure_ascii=ensure_ascii)
    items = [json.dumps(line, ensure_ascii=ensure_ascii) for line in lines]
    match = re.match(r"\[(\s*)", original)
    if "\n" not in original or not match or not items:
        return "[" + ", ".join(items) + "]"
    item_indent = match.group(1)
    closing = re.search(r"(\s*)\]$", original).group(1)
    return "[" + item_indent + ("," + item_indent).join(items) + closing + "]"


def rewrite_cells(text: str, new_sources: dict[int, str]) -> str:
    """The notebook's JSON text with only the ``source`` of the given cells replaced.

    Every other byte (outputs, metadata, key order, indentation) stays as it was.
    """
    spans = _source_spans(text)
    ensure_ascii = text.isascii() and "\\u" in text
    pieces, last = [], 0
    for cell in sorted(new_sources):
        if cell not in spans:
            raise NotebookError(f"cell {cell + 1} has no source to rewrite")
        start, end = spans[cell]
        lines = new_sources[cell].splitlines(keepends=True)
        pieces += [text[last:start], _source_json(lines, text[start:end], ensure_ascii)]
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


def fix_notebook(text: str, fix_source: Callable[[str], str]) -> tuple[str, list[int]]:
    """(the notebook's new JSON text, the 0-based cells changed) after ``fix_source`` on its code.

    Raises :class:`NotebookError` when the rewrite cannot be put back into the
    cells safely; the file is then left as it is.
    """
    combined = combine(read_cells(text))
    fixed = fix_source(combined.text)
    if fixed == combined.text:
        return text, []
    changed = {
        cell: new for cell, new in combined.split(fixed).items() if new != combined.cells[cell]
    }
    return rewrite_cells(text, changed), sorted(changed)


# -- fullgraph check -------------------------------------------------------------


class NotebookSyntaxError(Exception):
    """A notebook cell (or the file) the rules could not read: ``cell`` is 1-based, or None."""

    def __init__(self, message: str, line: int = 1, column: int = 0, cell: int | None = None):
        super().__init__(message)
        self.message, self.line, self.column, self.cell = message, line, column, cell


def lint_notebook_file(
    text: str, path: str, errors: dict | None = None, key: Any = None
) -> list[CellFinding]:
    """``fullgraph check`` on one ``.ipynb`` text: its findings, and its first unreadable cell.

    A cell that does not parse is recorded in ``errors[key]`` (the first one,
    with how many more) while the other cells' findings are returned.
    """
    from fullgraph.refactors import SourceSyntaxError, lint_source

    try:
        cells = read_cells(text)
    except NotebookError as error:
        if errors is not None:
            errors[key] = NotebookSyntaxError(f"cannot read the notebook: {error}")
        return []
    combined, found = lint_notebook(
        cells, lambda source: lint_source(source, path), SourceSyntaxError
    )
    if combined.syntax_errors and errors is not None:
        first, more = combined.syntax_errors[0], len(combined.syntax_errors) - 1
        message = first.message + (f" (and {more} more cell{'s' * (more != 1)})" if more else "")
        errors[key] = NotebookSyntaxError(message, first.line, first.column, first.cell + 1)
    return found
