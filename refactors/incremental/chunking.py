"""A module cut into top-level chunks, and which chunks a chunk's findings depend on.

The incremental linter (:mod:`fullgraph.refactors.incremental.linter`) lints a file
one top-level statement at a time, so that an edit re-lints only what it
touched.  This module does the cheap part with :mod:`ast` (a whole-file
``ast.parse`` costs a few percent of a libcst pass):

- :func:`split_chunks` cuts the source into chunks: a chunk starts on the
  first line of a top-level statement (its first decorator for a ``def`` or
  ``class``) and runs up to the next chunk, so the blank and comment lines
  between two statements belong to the one above.  Statements that share a
  line (``a = 1; b = 2``) stay in one chunk.  After an edit, :func:`rechunk`
  parses only the chunks the edit changed.
- :class:`~fullgraph.refactors.incremental.chunk_names.ChunkNames` records,
  per chunk, the names through which the rules see other chunks
  (:mod:`fullgraph.refactors.incremental.chunk_names`).
- :meth:`DependencyIndex.needed` says which chunks must be linted together
  with a chunk for its findings to be exactly those of a whole-file lint: the
  callers of its functions that may be compiled, transitively (they decide
  whether a function is compiled), the subclasses of its classes, and then
  everything those chunks use, transitively (imports and other module-level
  bindings, base classes, called functions and their bodies).

Every set here over-approximates what the rules read (any identifier counts
as a use); a chunk linted with more real chunks around it gets the same
findings, only later.
"""

from __future__ import annotations

import ast
import bisect
import dataclasses
import re
from collections.abc import Iterable, Sequence

from .chunk_names import ChunkNames, chunk_names

_NEWLINE = re.compile(r"\r\n|\r|\n")


@dataclasses.dataclass(frozen=True)
class Chunk:
    """One or more top-level statements and the lines up to the next chunk."""

    text: str
    start_line: int  # 1-based line of the chunk's first line in the file
    start_offset: int  # offset of its first character in the file
    line_count: int
    names: ChunkNames


def line_starts(source: str) -> list[int]:
    """Offsets where each line starts, with Python's own line breaks (not str.splitlines)."""
    return [0, *(match.end() for match in _NEWLINE.finditer(source))]


def split_chunks(
    source: str, cache: dict[str, ChunkNames] | None = None, tree: ast.Module | None = None
) -> list[Chunk]:
    """The chunks of ``source`` in file order; raises ``SyntaxError`` when it does not parse.

    ``cache`` maps a chunk's text to its names, so unchanged chunks are not walked again.
    """
    if tree is None:
        tree = ast.parse(source)
    starts = line_starts(source)
    lines = len(starts) if starts[-1] < len(source) or len(starts) == 1 else len(starts) - 1
    groups: list[list[ast.stmt]] = []
    first_lines: list[int] = []
    previous_end = 0
    for statement in tree.body:
        first = _first_line(statement)
        continued = first > 1 and _ends_with_backslash(source, starts, first - 1)
        if groups and (first <= previous_end or continued):
            groups[-1].append(statement)
        else:
            groups.append([statement])
            first_lines.append(first)
        previous_end = max(previous_end, statement.end_lineno or statement.lineno)
    if not groups:
        return []
    first_lines[0] = 1  # the module's leading comments go with the first statement
    chunks = []
    for index, group in enumerate(groups):
        start_line = first_lines[index]
        end_line = first_lines[index + 1] if index + 1 < len(groups) else lines + 1
        start = starts[start_line - 1]
        end = starts[end_line - 1] if end_line - 1 < len(starts) else len(source)
        text = source[start:end]
        names = cache.get(text) if cache is not None else None
        if names is None:
            names = chunk_names(group)
            if cache is not None:
                cache[text] = names
        chunks.append(Chunk(text, start_line, start, end_line - start_line, names))
    return chunks


def _ends_with_backslash(source: str, starts: list[int], line: int) -> bool:
    start = starts[line - 1]
    end = starts[line] if line < len(starts) else len(source)
    return source[start:end].rstrip("\r\n").endswith("\\")


def rechunk(
    old_source: str, old_chunks: Sequence[Chunk], new_source: str, cache: dict[str, ChunkNames]
) -> list[Chunk] | None:
    """The chunks of ``new_source``, parsing only the chunks that differ from ``old_source``.

    The changed text is widened to whole chunks (and one more before it when the
    change starts exactly where a chunk does, since new lines there belong to the
    chunk above).  When that part parses on its own, it starts with a statement
    (its first character is unchanged, or the chunk before was taken too) and
    ends where an unchanged statement starts, so the whole file parses into the
    same statements.  None when it does not parse: the caller parses the whole.
    """
    if not old_chunks:
        return None
    prefix = _common_prefix(old_source, new_source)
    suffix = _common_suffix(old_source, new_source, min(len(old_source), len(new_source)) - prefix)
    low, high = prefix, len(old_source) - suffix
    starts = [chunk.start_offset for chunk in old_chunks]
    first = bisect.bisect_right(starts, low) - 1
    if first > 0 and starts[first] == low:
        first -= 1
    last = max(first, bisect.bisect_right(starts, max(high - 1, low)) - 1)
    start = starts[first]
    end = starts[last + 1] if last + 1 < len(starts) else len(old_source)
    delta = len(new_source) - len(old_source)
    text = new_source[start : end + delta]
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    region = split_chunks(text, cache, tree)
    if text and not region:
        return None  # only comments left: they belong to the chunk above
    if region and _ends_with_backslash(text, line_starts(text), region[-1].start_line):
        return None  # split_chunks joins the next chunk to a line ending in a backslash
    if region and first > 0 and _first_line(tree.body[0]) != 1:
        return None
    line = old_chunks[first].start_line
    placed = [
        dataclasses.replace(
            chunk, start_line=chunk.start_line + line - 1, start_offset=chunk.start_offset + start
        )
        for chunk in region
    ]
    line_delta = sum(c.line_count for c in region) - sum(
        c.line_count for c in old_chunks[first : last + 1]
    )
    after = [
        dataclasses.replace(
            chunk, start_line=chunk.start_line + line_delta, start_offset=chunk.start_offset + delta
        )
        for chunk in old_chunks[last + 1 :]
    ]
    return [*old_chunks[:first], *placed, *after]


def _decorators(statement: ast.stmt) -> list[ast.expr]:
    return getattr(statement, "decorator_list", [])


def _first_line(statement: ast.stmt) -> int:
    return min([statement.lineno, *(d.lineno for d in _decorators(statement))])


def _common_prefix(a: str, b: str) -> int:
    # Halving on slice equality: each comparison runs at memcmp speed.
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _common_suffix(a: str, b: str, limit: int) -> int:
    low, high = 0, limit
    while low < high:
        middle = (low + high + 1) // 2
        if a[len(a) - middle :] == b[len(b) - middle :]:
            low = middle
        else:
            high = middle - 1
    return low


class DependencyIndex:
    """Which chunks bind, define and call each name; answers :meth:`needed` per chunk.

    ``entrypoints`` are the linter's (qualified names of functions that start a
    compiled region): a chunk defining a function of that name may compile.
    """

    def __init__(self, chunks: Sequence[Chunk], entrypoints: Iterable[str] = ()) -> None:
        self.chunks = chunks
        self.binders: dict[str, list[int]] = {}
        self.definers: dict[str, list[int]] = {}
        self.callers: dict[str, list[int]] = {}
        self.subclassers: dict[str, list[int]] = {}
        self.star_imports = [i for i, chunk in enumerate(chunks) if chunk.names.star_import]
        # The call tree function by function, resolved as regions.py resolves it: a call
        # of ``name`` reaches every plain function of that name and, from a method of
        # class C, C's methods of that name and the functions C assigned to ``self.name``.
        # Keys are (class or None, function name); values (chunk, calling function's key).
        self.plain_callers: dict[str, list[tuple[int, tuple]]] = {}
        self.method_callers: dict[tuple[str, str], list[tuple[int, tuple]]] = {}
        self.assigned_to: dict[str, set[tuple[str, str]]] = {}
        # Methods by name, for ``self.<name>`` read where no class owns ``self``.  (A
        # method of class C needs no index of its own: the chunks that define a class C
        # are found through the class name, which each of them uses.)
        self.methods_named: dict[str, list[int]] = {}
        for index, chunk in enumerate(chunks):
            for owner, name, calls in chunk.names.functions:
                for called in calls:
                    self.plain_callers.setdefault(called, []).append((index, (owner, name)))
                    if owner is not None:
                        self.method_callers.setdefault((owner, called), []).append(
                            (index, (owner, name))
                        )
            for owner, attribute, function in chunk.names.function_attributes:
                self.assigned_to.setdefault(function, set()).add((owner, attribute))
            for _, name in chunk.names.methods:
                self.methods_named.setdefault(name, []).append(index)
        for index, chunk in enumerate(chunks):
            for name in chunk.names.binds:
                self.binders.setdefault(name, []).append(index)
            for name in chunk.names.base_names:
                self.subclassers.setdefault(name, []).append(index)
            for name in chunk.names.defines:
                self.definers.setdefault(name, []).append(index)
            for name in chunk.names.calls:
                self.callers.setdefault(name, []).append(index)
        self.compiled = self._compiled({re.split(r"[.:]", name)[-1] for name in entrypoints})

    def _compiled(self, entry_names: set[str]) -> set[int]:
        """Chunks that may hold a compiled function: a region's start, or called from one."""
        found = {
            index
            for index, chunk in enumerate(self.chunks)
            if chunk.names.may_compile or chunk.names.defines & entry_names
        }
        pending = list(found)
        while pending:
            for name in self.chunks[pending.pop()].names.calls:
                for callee in self.definers.get(name, ()):
                    if callee not in found:
                        found.add(callee)
                        pending.append(callee)
        return found

    def _callers_of(self, owner: str | None, name: str) -> list[tuple[int, tuple]]:
        """The functions whose calls may reach the function ``name`` of class ``owner``."""
        if owner is not None:
            return self.method_callers.get((owner, name), [])
        found = list(self.plain_callers.get(name, ()))
        for klass, attribute in self.assigned_to.get(name, ()):
            found.extend(self.method_callers.get((klass, attribute), ()))
        return found

    def needed(self, index: int) -> list[int]:
        """The chunks to lint with chunk ``index`` (itself included), in file order."""
        chunks = self.chunks
        # Callers first: whether a function is compiled depends on who calls it (only
        # callers that may be compiled themselves pass a region on), and on who calls
        # those callers: followed function by function, not through every function of
        # a caller's chunk (in model code every class calls some other's method names).
        callers = {index}
        pending = [(owner, name) for owner, name, _ in chunks[index].names.functions]
        followed = set(pending)
        while pending:
            for caller, key in self._callers_of(*pending.pop()):
                if caller in self.compiled:
                    callers.add(caller)
                    if key not in followed:
                        followed.add(key)
                        pending.append(key)
        # The subclasses of its classes, which may rebuild their layers.
        pending = [index]
        while pending:
            for name in chunks[pending.pop()].names.classes:
                for subclass in self.subclassers.get(name, ()):
                    if subclass not in callers:
                        callers.add(subclass)
                        pending.append(subclass)
        # Then everything any of them uses, and what that uses in turn.
        found = set(callers) | set(self.star_imports)
        pending = list(found)
        while pending:
            for user in self._binders_of(chunks[pending.pop()].names):
                if user not in found:
                    found.add(user)
                    pending.append(user)
        return sorted(found)

    def _binders_of(self, names: ChunkNames) -> Iterable[int]:
        """The chunks that bind what ``names`` uses.

        A method of one of its classes is among them through the class name; a method
        is no binding of its name for other classes (regions.py and the rules reach
        ``self.m`` only in the caller's own class), unless ``self`` has no class there.
        """
        for name in names.uses:
            yield from self.binders.get(name, ())
        for name in names.loose_attributes:
            yield from self.methods_named.get(name, ())
