"""The position helper: fullgraph coordinates <-> LSP positions in each encoding."""

from __future__ import annotations

import pytest
from fullgraph.lsp_server.positions import (
    PositionMapper,
    code_units,
    split_lines,
    utf8_offset_to_column,
)
from lsprotocol import types

# Line 2 holds a BMP accent (é: 1 UTF-16 unit, 2 UTF-8 bytes) and an astral
# letter (𝔵: 2 UTF-16 units, 4 UTF-8 bytes) before `x`.
TEXT = "import torch\ns = 'é𝔵' + x\r\nlast"


@pytest.mark.parametrize(
    ("encoding", "column_of_x"),
    [("utf-16", 12), ("utf-8", 15), ("utf-32", 11)],
)
def test_columns_after_non_ascii_are_counted_in_the_client_encoding(encoding, column_of_x):
    mapper = PositionMapper(TEXT, encoding)
    # `x` is code point 10 of line 2 (1-based)
    assert mapper.position(2, 10) == types.Position(line=1, character=column_of_x - 1)
    assert mapper.range(2, 10, 2, 11).end == types.Position(line=1, character=column_of_x)
    assert mapper.source_position(types.Position(line=1, character=column_of_x - 1)) == (2, 10)


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
def test_round_trip_every_column(encoding):
    mapper = PositionMapper(TEXT, encoding)
    for line_number, line in enumerate(split_lines(TEXT), start=1):
        for column in range(len(line) + 1):
            assert mapper.source_position(mapper.position(line_number, column)) == (
                line_number,
                column,
            )


def test_position_inside_a_surrogate_pair_rounds_down_to_its_character():
    mapper = PositionMapper(TEXT, "utf-16")
    # 𝔵 occupies UTF-16 units 6 and 7 of line 2; unit 7 is its second half.
    assert mapper.source_position(types.Position(line=1, character=7)) == (2, 6)


def test_out_of_range_input_is_clamped_not_raised():
    mapper = PositionMapper(TEXT, "utf-16")
    assert mapper.position(2, 999) == types.Position(
        line=1, character=code_units("s = 'é𝔵' + x", "utf-16")
    )
    assert mapper.position(99, 0) == types.Position(line=2, character=4)
    assert mapper.position(0, 5) == types.Position(line=0, character=0)
    assert mapper.source_position(types.Position(line=50, character=3)) == (3, 4)
    assert mapper.range(2, 5, 1, 0).start == mapper.range(2, 5, 1, 0).end  # inverted spans collapse


def test_lines_split_like_lsp_not_like_str_splitlines():
    # A form feed or U+2028 is not a line break for LSP (or libcst).
    text = "a\x0cb\u2028c\nd\re\r\nf"
    assert split_lines(text) == ["a\x0cb\u2028c", "d", "e", "f"]
    assert PositionMapper(text).position(2, 1) == types.Position(line=1, character=1)


def test_whole_document_range_ends_at_the_last_character():
    assert PositionMapper("a\n𝔵", "utf-16").whole_document() == types.Range(
        start=types.Position(line=0, character=0), end=types.Position(line=1, character=2)
    )


def test_unknown_encoding_falls_back_to_utf16():
    assert PositionMapper("𝔵x", "utf-7").position(1, 1).character == 2


def test_ast_byte_offsets_become_code_point_columns():
    line = "    é𝔵 = f(x)"
    assert utf8_offset_to_column(line, len("    é𝔵 = ".encode())) == len("    é𝔵 = ")
