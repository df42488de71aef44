"""The one place where source coordinates become LSP positions and back.

fullgraph's own coordinates (libcst positions, refactor findings, runtime
break locations) use 1-based lines and 0-based columns counted in Unicode
code points.  LSP positions use 0-based lines and columns counted in the
code units of the encoding negotiated at ``initialize``: UTF-16 unless the
client offers something else (Neovim 0.10+ prefers UTF-8).  An astral
character such as "𝔵" is one code point, two UTF-16 units and four UTF-8
bytes, so a column is only meaningful together with its encoding.

Every conversion in the server goes through :class:`PositionMapper`, which
holds the document's lines and the encoding; nothing else does arithmetic on
columns.  Out-of-range input (a stale finding after an edit, a client
position past the end of a line) is clamped instead of raising: a squiggle
in a slightly wrong place beats a failed request.
"""

from __future__ import annotations

import dataclasses
import re

from lsprotocol import types

UTF8 = "utf-8"
UTF16 = "utf-16"
UTF32 = "utf-32"

# LSP separates lines with exactly these; str.splitlines() would also split on
# form feeds, U+2028 and friends and disagree with the client's line numbers.
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """The document's lines as the client counts them, without terminators."""
    return _LINE_BREAK.split(text)


def _units(char: str, encoding: str) -> int:
    code_point = ord(char)
    if encoding == UTF32:
        return 1
    if encoding == UTF8:
        if code_point < 0x80:
            return 1
        if code_point < 0x800:
            return 2
        return 3 if code_point < 0x10000 else 4
    return 2 if code_point > 0xFFFF else 1


def code_units(text: str, encoding: str = UTF16) -> int:
    """Length of ``text`` in the code units of ``encoding``."""
    if encoding == UTF32:
        return len(text)
    return sum(_units(char, encoding) for char in text)


def normalize_encoding(encoding: str | types.PositionEncodingKind | None) -> str:
    """The encoding's wire name; unknown or missing means LSP's default, UTF-16."""
    value = getattr(encoding, "value", encoding)
    return value if value in (UTF8, UTF16, UTF32) else UTF16


@dataclasses.dataclass(frozen=True)
class SourceSpan:
    """A span in fullgraph coordinates: 1-based lines, code-point columns."""

    line: int
    column: int
    end_line: int
    end_column: int


class PositionMapper:
    """Converts between fullgraph coordinates and LSP positions for one text."""

    def __init__(self, text: str, encoding: str | types.PositionEncodingKind | None = UTF16):
        self.lines = split_lines(text)
        self.encoding = normalize_encoding(encoding)

    # -- fullgraph -> LSP ---------------------------------------------------
    def position(self, line: int, column: int) -> types.Position:
        """LSP position of a 1-based line and a code-point column."""
        index = line - 1
        if index < 0:
            return types.Position(line=0, character=0)
        if index >= len(self.lines):
            last = len(self.lines) - 1
            return types.Position(line=last, character=code_units(self.lines[last], self.encoding))
        text = self.lines[index]
        column = min(max(column, 0), len(text))
        return types.Position(line=index, character=code_units(text[:column], self.encoding))

    def range(self, line: int, column: int, end_line: int, end_column: int) -> types.Range:
        """LSP range of a span given in fullgraph coordinates."""
        start = self.position(line, column)
        end = self.position(end_line, end_column)
        if (end.line, end.character) < (start.line, start.character):
            end = start
        return types.Range(start=start, end=end)

    def range_of(self, item: object) -> types.Range:
        """LSP range of anything with line/column/end_line/end_column attributes."""
        return self.range(item.line, item.column, item.end_line, item.end_column)

    def line_range(self, line: int) -> types.Range:
        """The whole of one 1-based line (for findings that only know their line)."""
        index = min(max(line - 1, 0), len(self.lines) - 1)
        return self.range(index + 1, 0, index + 1, len(self.lines[index]))

    def whole_document(self) -> types.Range:
        """A range covering the entire text, for full-document replacements."""
        return self.range(1, 0, len(self.lines), len(self.lines[-1]))

    # -- LSP -> fullgraph ---------------------------------------------------
    def source_position(self, position: types.Position) -> tuple[int, int]:
        """(1-based line, code-point column) of an LSP position."""
        if position.line >= len(self.lines):
            return len(self.lines), len(self.lines[-1])
        text = self.lines[max(position.line, 0)]
        remaining = max(position.character, 0)
        column = 0
        for char in text:
            width = _units(char, self.encoding)
            # A position inside a surrogate pair or a multi-byte sequence is
            # invalid; round it down to the character that contains it.
            if remaining < width:
                break
            remaining -= width
            column += 1
        return max(position.line, 0) + 1, column

    def source_span(self, lsp_range: types.Range) -> SourceSpan:
        """A span in fullgraph coordinates for an LSP range."""
        line, column = self.source_position(lsp_range.start)
        end_line, end_column = self.source_position(lsp_range.end)
        return SourceSpan(line, column, end_line, end_column)


def utf8_offset_to_column(line_text: str, byte_offset: int) -> int:
    """Code-point column of a UTF-8 byte offset (what :mod:`ast` reports)."""
    return len(line_text.encode("utf-8")[:byte_offset].decode("utf-8", errors="ignore"))


def contains(span_range: types.Range, position: types.Position) -> bool:
    """Whether an LSP position lies inside (or at the edges of) an LSP range."""
    start = (span_range.start.line, span_range.start.character)
    end = (span_range.end.line, span_range.end.character)
    return start <= (position.line, position.character) <= end


def overlaps(first: types.Range, second: types.Range) -> bool:
    """Whether two LSP ranges share at least one position."""
    return (first.start.line, first.start.character) <= (
        second.end.line,
        second.end.character,
    ) and (
        second.start.line,
        second.start.character,
    ) <= (first.end.line, first.end.character)
