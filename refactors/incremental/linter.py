"""Linting a document again after an edit, re-running the rules only where the edit reaches.

A libcst pass over a whole 2,000-line file takes seconds (parsing, positions,
scopes and parents are all resolved for every node), far over what an editor
can wait after each keystroke.  :class:`IncrementalLinter` keeps the findings
of each top-level chunk (:mod:`fullgraph.refactors.incremental.chunking`) and,
after an edit, lints only the chunks whose inputs changed.

A chunk is linted inside a *partial module*
(:mod:`fullgraph.refactors.incremental.partial`): the chunks it depends on, in
file order.  Its findings are cached, with lines relative to the chunk, under
the text of the chunks it needs (of a line of imports, only the bindings they
use), and moved to wherever the chunk now starts; the cache is shared by the
linters of a process, so a document opened again is not linted again.  The
findings are those of :func:`~fullgraph.refactors.engine.lint_source` on the
whole file (``tests/refactors/test_incremental.py`` checks it on every fixture
and on random edits); only a rule that crashes differs, since its findings are
lost for the partial modules it crashes on rather than the file.

Fixes are built when first read, as in ``lint_source``, but from the whole
file (:mod:`fullgraph.refactors.incremental.fixes`).
"""

from __future__ import annotations

import ast
import bisect
import dataclasses
import gc
import logging
import threading
from collections import OrderedDict
from collections.abc import Collection, Mapping, Sequence

from ..engine import lint_source, parse_source
from ..findings import Finding, Fix
from .chunk_names import ChunkNames
from .chunking import Chunk, DependencyIndex, rechunk, split_chunks
from .fixes import fix_edits
from .partial import FallBack, Layout, Snapshot, build_partial, layout_of, lint_partial

logger = logging.getLogger(__name__)

# Linting this many chunks at once is an opening, not an edit.
_MANY_CHUNKS = 16
# Missing chunks are linted together in partial modules of up to this many characters
# (see _lint_chunks); the equivalence test sets 0 to lint every chunk with only what it needs.
_GROUP_CHARACTERS = 2_000


# -- the linter -----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Found:
    """A finding of one chunk, lines counted from the chunk's first line (0-based)."""

    finding: Finding  # lines relative to the chunk; no fix
    fix_title: str | None


class _SharedResults:
    """Chunk results of every linter in the process, the most recently used kept.

    A key holds everything the findings depend on, never the path, so a document
    closed and opened again, or a second file with the same classes, is linted
    from here; linters run in the language server's worker threads, hence the lock.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[tuple, list[_Found]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple) -> list[_Found] | None:
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found

    def put(self, key: tuple, found: list[_Found]) -> None:
        with self._lock:
            self._entries[key] = found
            self._entries.move_to_end(key)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)


# Some files' worth of chunks; a key holds the text of its chunk and of what it needs.
_SHARED = _SharedResults(capacity=4000)


class IncrementalLinter:
    """Lints successive versions of one document; :meth:`lint` equals ``lint_source``.

    Keep one per open document.  Not thread-safe: one :meth:`lint` at a time.
    The findings' fixes may be built from any thread, later.
    """

    def __init__(
        self,
        path: str = "<string>",
        *,
        codes: Collection[str] | None = None,
        entrypoints: Collection[str] = (),
    ) -> None:
        self.path = path
        self.codes = frozenset(codes) if codes is not None else None
        # The names, as given; the rules get the reasons too when ``entrypoints`` is a
        # mapping (``workspace_entrypoints``: the caller in another file), as lint_source.
        self.entrypoints = tuple(entrypoints)
        self.entrypoint_reasons: dict[str, str] = (
            dict(entrypoints) if isinstance(entrypoints, Mapping) else {}
        )
        self._names: dict[str, ChunkNames] = {}
        self._results: dict[tuple, list[_Found]] = {}
        # The last source that parsed and its chunks: an edit re-parses only what it changed.
        self._last: tuple[str, tuple[Chunk, ...]] | None = None
        # How many chunks the last lint ran the rules on (the rest came from the cache).
        self.relinted = 0

    def lint(self, source: str) -> list[Finding]:
        """Findings of ``source``, sorted by position; raises SourceSyntaxError like lint_source."""
        chunks = self._chunks(source)
        if chunks is None:
            parse_source(source, self.path)  # raises SourceSyntaxError with CPython's message
            return self._whole_file(source, "ast rejects what libcst parses")
        if "torch" not in source and not self.entrypoints:
            self.relinted = 0
            return []  # as lint_source: every rule is about torch code
        layout = layout_of(source)
        snapshot = Snapshot(source, chunks, layout, self.path, self.codes, self._for_rules())
        index = DependencyIndex(chunks, self.entrypoints)
        keys, missing = self._keys(layout, chunks, index), []
        results = {}
        for position, key in enumerate(keys):
            found = self._results.get(key)
            if found is None:
                found = _SHARED.get(key)
            if found is None:
                missing.append(position)
            else:
                results[key] = found
        try:
            fresh = self._lint_chunks(snapshot, index, missing)
        except FallBack as reason:
            return self._whole_file(source, str(reason))
        for position, found in fresh.items():
            results[keys[position]] = found
            _SHARED.put(keys[position], found)
        self._results = results
        self.relinted = len(missing)
        if len(missing) >= _MANY_CHUNKS:
            # libcst's scope analysis leaves reference cycles (scopes <-> assignments): after
            # a large lint, free them now rather than in a collection during a later edit,
            # which would then take some hundred ms longer than the edit itself.
            gc.collect()
        findings = []
        for position, chunk in enumerate(chunks):
            for found in results[keys[position]]:
                findings.append(self._place(found, chunk, position, snapshot))
        return findings

    def _for_rules(self) -> Collection[str]:
        """The entrypoints as the rules take them: with their reasons when there are any."""
        return self.entrypoint_reasons or self.entrypoints

    def _keys(self, layout: Layout, chunks: Sequence[Chunk], index: DependencyIndex) -> list:
        keys = []
        for position in range(len(chunks)):
            needed = index.needed(position)
            keys.append(
                (
                    layout,
                    self.codes,
                    self.entrypoints,
                    tuple(sorted(self.entrypoint_reasons.items())),
                    _inputs(chunks, needed, position),
                    needed.index(position),
                )
            )
        return keys

    def seed(self, source: str, findings: Sequence[Finding]) -> None:
        """Take ``findings``, ``lint_source``'s for ``source`` with this linter's settings, as
        the results of its chunks, so that the next :meth:`lint` re-lints only what changed.

        ``fix_source`` lints the whole file to build a round of fixes, then asks whether
        the rewritten file has more: that second question re-lints only the rewritten
        chunks and what depends on them.
        """
        chunks = self._chunks(source)
        if chunks is None or ("torch" not in source and not self.entrypoints):
            return
        layout = layout_of(source)
        keys = self._keys(layout, chunks, DependencyIndex(chunks, self.entrypoints))
        starts = [chunk.start_line for chunk in chunks]
        found: list[list[_Found]] = [[] for _ in chunks]
        for finding in findings:
            position = bisect.bisect_right(starts, finding.line) - 1
            if position < 0 or finding.end_line >= starts[position] + chunks[position].line_count:
                return  # not inside one chunk: leave the cache as it is
            shift = starts[position]
            found[position].append(
                _Found(
                    dataclasses.replace(
                        finding,
                        line=finding.line - shift,
                        end_line=finding.end_line - shift,
                        fix=None,
                    ),
                    finding.fix.title if finding.fix is not None else None,
                )
            )
        self._results = dict(zip(keys, found))
        for key, chunk_found in self._results.items():
            _SHARED.put(key, chunk_found)

    def _chunks(self, source: str) -> tuple[Chunk, ...] | None:
        """The chunks of ``source``, or None when it does not parse."""
        chunks = None
        if self._last is not None:
            chunks = rechunk(*self._last, source, self._names)
        if chunks is None:
            try:
                tree = ast.parse(source)
            except (SyntaxError, ValueError):
                return None
            chunks = split_chunks(source, self._names, tree)
        chunks = tuple(chunks)
        self._last = (source, chunks)
        # Keep only the names of chunks that still exist, so the cache does not grow.
        self._names = {chunk.text: chunk.names for chunk in chunks}
        return chunks

    def _whole_file(self, source: str, reason: str) -> list[Finding]:
        logger.warning("linting %s as a whole: %s", self.path, reason)
        self._results = {}
        self.relinted = -1
        return lint_source(source, self.path, codes=self.codes, entrypoints=self._for_rules())

    def _lint_chunks(
        self, snapshot: Snapshot, index: DependencyIndex, missing: list[int]
    ) -> dict[int, list[_Found]]:
        """Lint the ``missing`` chunks, several at a time in one partial module.

        A chunk linted among more chunks than it needs gets the same findings, and
        each partial module costs a fixed overhead (providers, rule set-up), so
        neighbouring chunks share one, up to a size: some rules look at the
        whole module for each statement they check, which grows with its square.
        """
        groups: list[tuple[list[int], list[int]]] = []
        included: set[int] = set()
        positions: list[int] = []
        for position in missing:
            needed = set(index.needed(position))
            merged = included | needed
            size = sum(len(snapshot.chunks[i].text) for i in merged)
            if positions and size > _GROUP_CHARACTERS:
                groups.append((sorted(included), positions))
                merged, positions = needed, []
            included = merged
            positions.append(position)
        if positions:
            groups.append((sorted(included), positions))
        grouped = sum(len(snapshot.chunks[i].text) for included, _ in groups for i in included)
        if len(groups) > 1 and grouped > len(snapshot.source) // 2:
            # Chunks that need much of the file (real model code) each bring it along, so
            # the groups together would hold more text than the file: one partial module
            # of everything the missing chunks need (at most the file) gives the same
            # findings for less.
            union: set[int] = set()
            for position in missing:
                union.update(index.needed(position))
            groups = [(sorted(union), list(missing))]
        fresh: dict[int, list[_Found]] = {}
        for included, positions in groups:
            partial = build_partial(snapshot.layout, snapshot.chunks, included)
            context = lint_partial(
                partial, snapshot.layout, self.path, self.codes, snapshot.entrypoints
            )
            ordered = sorted(context.findings, key=lambda f: (f.line, f.column, f.code))
            starts = [f.line for f in ordered]
            slots = {chunk: slot for slot, chunk in enumerate(included)}
            for position in positions:
                first = partial.lines[slots[position]]
                last = first + snapshot.chunks[position].line_count
                fresh[position] = [
                    _Found(
                        dataclasses.replace(
                            f, line=f.line - first, end_line=f.end_line - first, fix=None
                        ),
                        f.fix.title if f.fix is not None else None,
                    )
                    for f in ordered[
                        bisect.bisect_left(starts, first) : bisect.bisect_left(starts, last)
                    ]
                ]
        return fresh

    def _place(self, found: _Found, chunk: Chunk, position: int, snapshot: Snapshot) -> Finding:
        finding = found.finding
        shift = chunk.start_line
        fix = None
        if found.fix_title is not None:
            fix = Fix(found.fix_title, build=lambda: fix_edits(snapshot, position, finding))
        return dataclasses.replace(
            finding, line=finding.line + shift, end_line=finding.end_line + shift, fix=fix
        )


def _inputs(chunks: Sequence[Chunk], needed: list[int], position: int) -> tuple:
    """What the findings of chunk ``position`` are a function of: the text of what it needs.

    A chunk of plain imports counts only through the names the others use, so
    that adding an import to a line every class depends on re-lints nothing.
    """
    used: set[str] = set()
    for index in needed:
        used |= chunks[index].names.uses
    return tuple(
        chunks[index].names.bindings(used)
        if index != position and chunks[index].names.imports is not None
        else chunks[index].text
        for index in needed
    )
