"""The notebook line map (``fullgraph.lsp_server.notebooks``): cells in, cells out, or a refusal.

Pure functions, no refactors needed: a user would see these as the cell and
line a finding is reported at, and as ``fullgraph fix`` refusing instead of
moving code between cells.
"""

from __future__ import annotations

import json

import pytest

from fullgraph.lsp_server.ipynb import read_cells, rewrite_cells
from fullgraph.lsp_server.notebooks import MARKER, Cell, NotebookError, combine


def cells(*sources: str) -> list[Cell]:
    return [Cell(index, source) for index, source in enumerate(sources)]


def test_lines_map_back_to_their_cell_and_line():
    combined = combine(cells("import torch", "x = 1\ny = torch.ones(2)\n"))
    lines = combined.text.split("\n")
    assert lines[0] == MARKER.format(1) and lines[2] == MARKER.format(2)
    assert combined.locate(1) is None  # a marker belongs to no cell
    assert combined.locate(2) == (0, 1)
    assert combined.locate(5) == (1, 2)  # "y = torch.ones(2)"


def test_magics_become_placeholders_only_when_the_cell_needs_it():
    text = 's = """\n%d items\n"""\n'  # parses as Python: a "%" line inside a string is text
    assert combine(cells(text)).text.split("\n")[1:4] == text.split("\n")[:3]
    combined = combine(cells("%time x = 1\n!ls\nfiles = !ls\nif True:\n    %env A=1\n"))
    body = combined.text.split("\n")[1:6]
    assert body[:3] == ["pass  # fullgraph: IPython magic"] * 3
    assert body[4] == "    pass  # fullgraph: IPython magic"  # same indentation
    assert combined.syntax_errors == []


def test_cell_magics_and_cells_that_do_not_parse_are_left_out():
    combined = combine(cells("%%bash\necho hi\n", "def f(:\n", "y = 2\n"))
    assert [span.cell for span in combined.spans] == [2]
    (error,) = combined.syntax_errors
    assert (error.cell, error.line) == (1, 1)


def test_split_restores_the_cells_and_their_magics():
    combined = combine(cells("%matplotlib inline\nimport torch", "y = 1\n"))
    fixed = combined.text.replace("y = 1", "y = 2")
    assert combined.split(fixed) == {0: "%matplotlib inline\nimport torch", 1: "y = 2\n"}


def test_split_refuses_a_rewrite_that_moved_code_across_cells():
    combined = combine(cells("a = 1", "b = 2"))
    swapped = combined.text.replace(MARKER.format(2), "b = 3\n" + MARKER.format(2))
    lines = swapped.split("\n")
    lines.remove(MARKER.format(1))
    with pytest.raises(NotebookError, match="across cells"):
        combined.split("\n".join(lines))


def test_split_refuses_an_import_added_after_the_code_that_needs_it():
    combined = combine(cells("x = f(1)", "import os"))
    fixed = combined.text.replace("x = f(1)", "x = g(1)").replace(
        "import os", "import os\nimport g"
    )
    with pytest.raises(NotebookError, match="move the notebook's imports to its first cell"):
        combined.split(fixed)


def test_rewrite_changes_only_the_source_values():
    notebook = {
        "cells": [
            {
                "cell_type": "code",
                "metadata": {"tags": ["a"]},
                "outputs": [],
                "source": ["x = 1\n", "y = 2"],
            },
            {"cell_type": "markdown", "metadata": {}, "source": "# Titlé"},
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    text = json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"
    new = rewrite_cells(text, {0: "x = 1\ny = 3\nz = 4"})
    assert json.loads(new)["cells"][0]["source"] == ["x = 1\n", "y = 3\n", "z = 4"]
    assert new.replace('"y = 3\\n",\n    "z = 4"', '"y = 2"') == text
    assert read_cells(new)[1] == Cell(1, "# Titlé", False)


def test_a_file_that_is_not_a_notebook_is_refused():
    with pytest.raises(NotebookError, match="not valid JSON"):
        read_cells("{")
    with pytest.raises(NotebookError, match="no list of cells"):
        read_cells('{"worksheets": []}')
