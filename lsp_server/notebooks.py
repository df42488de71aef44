"""Jupyter notebooks: the code cells as one Python source, and results mapped back per cell.

A notebook is linted as one module: its Python code cells, in order, joined
with a marker comment line before each (``# fullgraph-notebook-cell N``), so
that names defined in earlier cells (``import torch``, a model class) are
known in later ones.  :class:`CombinedSource` keeps the line map: a line of
the combined text belongs to one cell, at one line of that cell; the marker
lines belong to none.  Columns are unchanged, so a finding or an edit moves
to its cell by changing its line numbers only.

IPython syntax is handled without guessing:

- a cell that parses as Python is used as it is;
- otherwise, its line magics and shell escapes (``%time``, ``!pip``,
  ``x = !ls``) become ``pass`` placeholders at the same indentation, and the
  cell is used if that parses; an edit that touches a placeholder is refused;
- a cell magic (``%%time``, ``%%bash``) makes the whole cell not Python: it
  is left out, as is a cell that still does not parse (reported as a syntax
  error of that cell, while the other cells are linted).

A rewrite of the combined text (``fix_source``) goes back to the cells by
splitting at the marker lines (:meth:`CombinedSource.split`); when a marker
or placeholder went missing, or an import the rewrite added would land in a
cell after a cell it changed, the notebook is refused instead of guessed at.

Pure functions and plain data: the CLI and the language server share them;
reading and rewriting ``.ipynb`` files is :mod:`fullgraph.lsp_server.ipynb`.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Callable, Sequence
from typing import Any

MARKER = "# fullgraph-notebook-cell {}"
PLACEHOLDER = "pass  # fullgraph: IPython magic"
# A line magic, a shell escape, or one assigned: "%time f()", "!ls", "files = !ls".
_MAGIC = re.compile(r"^(?P<indent>[ \t]*)(?:[%!]|[\w.]+(?:\s*,\s*[\w.]+)*\s*=\s*[%!])")
_PARSE_FLAGS = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT


class NotebookError(Exception):
    """The file is not a notebook fullgraph can read or rewrite; the message says why."""


@dataclasses.dataclass(frozen=True)
class Cell:
    """One cell of a notebook: its position among all cells (0-based) and its text."""

    index: int
    source: str
    is_python: bool = True  # a code cell in a Python notebook


@dataclasses.dataclass(frozen=True)
class CellSyntaxError:
    """A cell that is not Python: where (in cell coordinates) and why."""

    cell: int
    line: int
    column: int
    message: str


@dataclasses.dataclass(frozen=True)
class CellSpan:
    """Where one cell's lines lie in the combined text."""

    cell: int
    start: int  # 1-based combined line of the cell's first line
    line_count: int
    placeholders: dict[int, str]  # 1-based cell line -> the magic it stands for


def _parses(text: str) -> SyntaxError | None:
    try:
        compile(text, "<cell>", "exec", flags=_PARSE_FLAGS, dont_inherit=True)
    except SyntaxError as error:
        return error
    except ValueError as error:  # null bytes
        return SyntaxError(str(error))
    return None


def _without_magics(text: str) -> tuple[str, dict[int, str]]:
    lines = text.split("\n")
    placeholders = {}
    for number, line in enumerate(lines, start=1):
        match = _MAGIC.match(line)
        if match:
            placeholders[number] = line
            lines[number - 1] = match.group("indent") + PLACEHOLDER
    return "\n".join(lines), placeholders


def python_text(cell: Cell) -> tuple[str | None, dict[int, str], CellSyntaxError | None]:
    """The cell as Python (None when left out), its placeholders, and its syntax error."""
    first = next((line.strip() for line in cell.source.split("\n") if line.strip()), "")
    if first.startswith("%%"):
        return None, {}, None  # a cell magic: the cell is another language
    error = _parses(cell.source)
    if error is None:
        return cell.source, {}, None
    text, placeholders = _without_magics(cell.source)
    if placeholders and _parses(text) is None:
        return text, placeholders, None
    return (
        None,
        {},
        CellSyntaxError(
            cell.index, error.lineno or 1, max((error.offset or 1) - 1, 0), error.msg or str(error)
        ),
    )


@dataclasses.dataclass
class CombinedSource:
    """The Python cells of a notebook as one text, with the map back to cells."""

    text: str
    spans: list[CellSpan]
    syntax_errors: list[CellSyntaxError]
    cells: dict[int, str]  # cell -> the text it had when combined (as the user sees it)

    def span(self, cell: int) -> CellSpan | None:
        return next((span for span in self.spans if span.cell == cell), None)

    def locate(self, line: int) -> tuple[int, int] | None:
        """(cell, 1-based line in the cell) of a combined line; None on a marker line."""
        for span in self.spans:
            if span.start <= line < span.start + span.line_count:
                return span.cell, line - span.start + 1
        return None

    def split(self, fixed: str) -> dict[int, str]:
        """Each cell's text after a rewrite of :attr:`text`; :class:`NotebookError` if unsure."""
        lines = fixed.split("\n")
        if lines and lines[-1] == "":
            lines.pop()  # the newline that ends the combined text
        markers = [MARKER.format(span.cell + 1) for span in self.spans]
        positions = [index for index, line in enumerate(lines) if line in markers]
        if [lines[index] for index in positions] != markers or (positions and positions[0] != 0):
            raise NotebookError("the rewrite moved code across cells")
        bounds = [*positions, len(lines)]
        texts: dict[int, str] = {}
        for number, span in enumerate(self.spans):
            cell_lines = lines[bounds[number] + 1 : bounds[number + 1]]
            originals = [span.placeholders[line] for line in sorted(span.placeholders)]
            at = [i for i, line in enumerate(cell_lines) if line.strip() == PLACEHOLDER]
            if len(at) != len(originals):
                raise NotebookError(
                    f"the rewrite changed an IPython magic line in cell {span.cell + 1}"
                )
            for index, original in zip(at, originals):
                cell_lines[index] = original
            texts[span.cell] = "\n".join(cell_lines)
        _check_import_order(self.cells, texts)
        return texts


def _top_level_imports(text: str) -> set[str]:
    try:
        tree = ast.parse(_without_magics(text)[0])
    except SyntaxError:
        return set()
    return {ast.dump(node) for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))}


def _check_import_order(before: dict[int, str], after: dict[int, str]) -> None:
    """Refuse a rewrite whose new import lands after a cell it changed (run in order, it fails)."""
    changed = sorted(cell for cell, text in after.items() if text != before.get(cell))
    for cell in changed:
        if _top_level_imports(after[cell]) - _top_level_imports(before[cell]) and cell > changed[0]:
            raise NotebookError(
                f"a fix needs an import that would be added to cell {cell + 1}, after the code "
                f"it fixes in cell {changed[0] + 1}; move the notebook's imports to its first cell"
            )


def combine(cells: Sequence[Cell]) -> CombinedSource:
    """The Python cells joined in order, each after its marker line."""
    lines: list[str] = []
    spans: list[CellSpan] = []
    errors: list[CellSyntaxError] = []
    texts: dict[int, str] = {}
    for cell in cells:
        if not cell.is_python:
            continue
        text, placeholders, error = python_text(cell)
        if error is not None:
            errors.append(error)
        if text is None:
            continue
        cell_lines = text.split("\n")
        lines.append(MARKER.format(cell.index + 1))
        spans.append(CellSpan(cell.index, len(lines) + 1, len(cell_lines), placeholders))
        lines.extend(cell_lines)
        texts[cell.index] = cell.source
    return CombinedSource("\n".join(lines) + "\n", spans, errors, texts)


# -- findings and edits --------------------------------------------------------


def move_to_cell(item: Any, combined: CombinedSource) -> tuple[int, Any] | None:
    """(cell, ``item`` with cell lines) for anything with line/end_line; None across cells."""
    start = combined.locate(item.line)
    end = combined.locate(item.end_line)
    if start is None or end is None or start[0] != end[0]:
        return None
    return start[0], dataclasses.replace(item, line=start[1], end_line=end[1])


def cell_edits(edits: Sequence[Any], combined: CombinedSource) -> list[tuple[int, Any]] | None:
    """Each edit in its cell's coordinates, or None when one cannot be placed safely.

    An edit that spans two cells, touches a magic placeholder, or sits on a
    marker line (an insertion at a cell boundary belongs to neither) has no
    place in the notebook the user sees.
    """
    placed = []
    for edit in edits:
        moved = move_to_cell(edit, combined)
        if moved is None:
            return None
        cell, cell_edit = moved
        span = combined.span(cell)
        if any(
            _overlaps_line(cell_edit, line, len(text)) for line, text in span.placeholders.items()
        ):
            return None
        placed.append((cell, cell_edit))
    return placed


def _overlaps_line(edit: Any, line: int, length: int) -> bool:
    """Whether ``edit`` changes text of ``line`` (an insertion at either end does not)."""
    start, end = (edit.line, edit.column), (edit.end_line, edit.end_column)
    return start < (line, length) and end > (line, 0)


def fix_by_cell(fix: Any, finding_cell: int, combined: CombinedSource) -> dict[int, list] | None:
    """A fix's edits grouped by cell, or None when it cannot be offered in the notebook.

    An edit in a later cell than the finding (an import added after the last
    import of the notebook) would run after the code that needs it: refused.
    """
    try:
        placed = cell_edits(fix.edits, combined)
    except Exception:  # noqa: BLE001 - a fix whose edits cannot be built offers nothing
        return None
    if not placed or any(cell > finding_cell for cell, _ in placed):
        return None
    grouped: dict[int, list] = {}
    for cell, edit in placed:
        grouped.setdefault(cell, []).append(edit)
    return grouped


# -- linting --------------------------------------------------------------------


class CellFix:
    """A fix found on the combined text, offered per cell: ``by_cell`` maps cell -> edits.

    The edits are built (and placed) the first time they are read, as the
    refactors build theirs; ``by_cell`` is None when they cannot be placed.
    """

    def __init__(self, fix: Any, cell: int, combined: CombinedSource) -> None:
        self.title = fix.title
        self._fix, self._cell, self._combined = fix, cell, combined
        self._by_cell: dict[int, list] | None = None
        self._placed = False

    @property
    def by_cell(self) -> dict[int, list] | None:
        if not self._placed:
            self._by_cell = fix_by_cell(self._fix, self._cell, self._combined)
            self._placed = True
        return self._by_cell

    @property
    def offered(self) -> bool:
        return self.by_cell is not None


@dataclasses.dataclass(frozen=True)
class CellFinding:
    """A finding moved into its cell: lines are the cell's, its fix a :class:`CellFix`."""

    cell: int
    finding: Any


def lint_notebook(
    cells: Sequence[Cell], lint: Callable[[str], list], syntax_error: type[Exception]
) -> tuple[CombinedSource, list[CellFinding]]:
    """Lint the notebook's Python cells as one module; findings in their cells.

    ``lint`` is the refactors' ``lint_source`` on a text; ``syntax_error`` the
    exception it raises when a text does not parse.  A cell that CPython
    accepts but the rules' parser does not is left out like any cell that
    does not parse, and the others are linted again.
    """
    left_out: list[CellSyntaxError] = []
    cells = list(cells)
    while True:
        skipped = {error.cell for error in left_out}
        combined = combine(
            [dataclasses.replace(c, is_python=False) if c.index in skipped else c for c in cells]
        )
        try:
            raw = lint(combined.text)
        except syntax_error as error:
            where = combined.locate(getattr(error, "line", 0) or 0)
            if where is None:
                raise
            message = getattr(error, "message", str(error))
            left_out.append(
                CellSyntaxError(where[0], where[1], getattr(error, "column", 0), message)
            )
            continue
        combined.syntax_errors.extend(left_out)
        combined.syntax_errors.sort(key=lambda error: error.cell)
        found = []
        for finding in raw:
            moved = move_to_cell(finding, combined)
            if moved is None:
                continue
            cell, cell_finding = moved
            fix = getattr(finding, "fix", None)
            if fix is not None:
                cell_finding = dataclasses.replace(cell_finding, fix=CellFix(fix, cell, combined))
            found.append(CellFinding(cell, cell_finding))
        return combined, found
