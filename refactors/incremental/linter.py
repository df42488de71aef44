"""Linting a document again after an edit, re-running the rules only where the edit reaches.

A libcst pass over a whole 2,000-line file takes seconds (parsing, positions,
scopes and parents are all resolved for every node), far over what an editor
can wait after each keystroke.  :class:`IncrementalLinter` keeps the findings
of each top-level chunk (:mod:`fullgraph.refactors.chunking`) and, after an
edit, lints only the chunks whose inputs changed.

A chunk is linted inside a *partial module*: the chunks it depends on
(:meth:`~fullgraph.refactors.chunking.DependencyIndex.needed`) in file order,
behind a two-line ``if 1:`` header that makes libcst pick the file's own
indentation and newline (new code in a fix is written with them).  Its
findings are cached, with lines relative to the chunk, under the text of the
chunks it needs (of a line of imports, only the bindings they use), and
moved to wherever the chunk now starts; the cache is shared by the linters of
a process, so a document opened again is not linted again.  The findings
are those of :func:`~fullgraph.refactors.engine.lint_source` on the
whole file (``tests/refactors/test_incremental.py`` checks it on every
fixture and on random edits); only a rule that crashes differs, since its
findings are lost for the partial modules it crashes on rather than the file.

Fixes are built when first read, as in ``lint_source``, but from the whole
file: the rule runs again on the partial module, this time seeing the whole
module for the names a rewrite must not reuse and for the import aliases; the
rewritten statements are put back into the file, and a needed import is added
to the whole module.  When that cannot be done exactly (a rewrite that spans
chunks), the fix is taken from a whole-file lint instead, which is slow but
right.
"""

from __future__ import annotations

import ast
import bisect
import dataclasses
import gc
import io
import logging
import re
import threading
import tokenize
from collections import OrderedDict
from collections.abc import Collection, Sequence

import libcst as cst
import libcst.metadata as meta

from .chunking import Chunk, ChunkNames, DependencyIndex, rechunk, split_chunks
from .context import RuleContext, _Replace
from .engine import _parse, lint_source, run_rules
from .findings import Finding, Fix, TextEdit
from .imports import _insertion_index, ensure_import
from .text_edits import diff_edits

logger = logging.getLogger(__name__)

_FIRST_NEWLINE = re.compile(r"\r\n|\r|\n")
# Linting this many chunks at once is an opening, not an edit.
_MANY_CHUNKS = 16
# Missing chunks are linted together in partial modules of up to this many characters
# (see _lint_chunks); the equivalence test sets 0 to lint every chunk with only what it needs.
_GROUP_CHARACTERS = 2_000


class _FallBack(Exception):
    """The partial-module route cannot give the exact result; use the whole file."""


# -- partial modules ------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Layout:
    """How libcst should lay out new code: the whole file's newline and first indentation."""

    newline: str
    indent: str

    @property
    def header(self) -> str:
        # libcst takes the module's newline from its first line break and its
        # indentation from its first indented block: this header supplies both.
        return f"if 1:{self.newline}{self.indent}pass{self.newline}"


def _layout(source: str) -> _Layout:
    match = _FIRST_NEWLINE.search(source)
    newline = match.group() if match else "\n"
    indent = "    "
    try:
        # Universal newlines: a file may break lines with a lone "\r".
        for token in tokenize.generate_tokens(io.StringIO(source, newline=None).readline):
            if token.type == tokenize.INDENT:
                indent = token.string
                break
    except (tokenize.TokenError, SyntaxError):
        pass
    return _Layout(newline, indent)


@dataclasses.dataclass
class _Partial:
    """The text of a partial module and where each of its chunks lies in it."""

    text: str
    chunks: list[int]  # file chunk indices, in file order
    offsets: list[int]  # where each chunk's text starts in ``text``
    lines: list[int]  # the 1-based line each chunk starts on in ``text``


def _partial(layout: _Layout, chunks: Sequence[Chunk], included: Sequence[int]) -> _Partial:
    parts = [layout.header]
    offset, line = len(layout.header), 3
    offsets, lines = [], []
    for index in included:
        chunk = chunks[index]
        offsets.append(offset)
        lines.append(line)
        parts.append(chunk.text)
        offset += len(chunk.text)
        line += chunk.line_count
    text = "".join(parts)
    if not text.endswith(("\n", "\r")):
        # Only the file's last chunk can lack a line break; statements need one.
        text += layout.newline
    return _Partial(text, list(included), offsets, lines)


class _PartialContext(RuleContext):
    """A rule context over a partial module that keeps each fix's rewrite instead of running it.

    ``module`` (the whole file, when given) is what the rules see as the module
    outside the nodes they visit: the names a rewrite must not reuse, the
    imports it refers to.
    """

    def __init__(
        self,
        partial: _Partial,
        path: str,
        wrapper: meta.MetadataWrapper,
        entrypoints: Collection[str],
        module: cst.Module | None = None,
    ) -> None:
        super().__init__(partial.text, path, wrapper, entrypoints)
        if module is not None:
            self.module = module
        self.rewrites: dict[int, tuple[dict, list[str]]] = {}

    def _build_fix(self, changes, imports, title):
        fix = Fix(title, build=_not_built)
        self.rewrites[id(fix)] = (changes, list(imports))
        return fix


def _not_built() -> list[TextEdit]:
    raise AssertionError("a partial module's fix is rebuilt from the whole file")


def _lint_partial(
    partial: _Partial,
    layout: _Layout,
    path: str,
    codes: Collection[str] | None,
    entrypoints: Collection[str],
    module: cst.Module | None = None,
) -> _PartialContext:
    try:
        tree = cst.parse_module(partial.text)
    except cst.ParserSyntaxError as error:
        raise _FallBack(f"a partial module does not parse ({error.message})") from None
    if (tree.default_newline, tree.default_indent) != (layout.newline, layout.indent):
        raise _FallBack("the partial module's layout differs from the file's")
    wrapper = meta.MetadataWrapper(tree, unsafe_skip_copy=True)
    context = _PartialContext(partial, path, wrapper, entrypoints, module)
    run_rules(context, codes)
    return context


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


@dataclasses.dataclass(frozen=True)
class _Snapshot:
    """One version of the document, everything a fix needs to be built later."""

    source: str
    chunks: tuple[Chunk, ...]
    layout: _Layout
    path: str
    codes: frozenset[str] | None
    entrypoints: tuple[str, ...]


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
        self.entrypoints = tuple(entrypoints)
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
            _parse(source, self.path)  # raises SourceSyntaxError with CPython's message
            return self._whole_file(source, "ast rejects what libcst parses")
        if "torch" not in source and not self.entrypoints:
            self.relinted = 0
            return []  # as lint_source: every rule is about torch code
        layout = _layout(source)
        snapshot = _Snapshot(source, chunks, layout, self.path, self.codes, self.entrypoints)
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
        except _FallBack as reason:
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

    def _keys(self, layout: _Layout, chunks: Sequence[Chunk], index: DependencyIndex) -> list:
        keys = []
        for position in range(len(chunks)):
            needed = index.needed(position)
            keys.append(
                (
                    layout,
                    self.codes,
                    self.entrypoints,
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
        layout = _layout(source)
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
        return lint_source(source, self.path, codes=self.codes, entrypoints=self.entrypoints)

    def _lint_chunks(
        self, snapshot: _Snapshot, index: DependencyIndex, missing: list[int]
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
            partial = _partial(snapshot.layout, snapshot.chunks, included)
            context = _lint_partial(
                partial, snapshot.layout, self.path, self.codes, self.entrypoints
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

    def _place(self, found: _Found, chunk: Chunk, position: int, snapshot: _Snapshot) -> Finding:
        finding = found.finding
        shift = chunk.start_line
        fix = None
        if found.fix_title is not None:
            fix = Fix(found.fix_title, build=lambda: _fix_edits(snapshot, position, finding))
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


# -- fixes ----------------------------------------------------------------------------


def _fix_edits(snapshot: _Snapshot, position: int, finding: Finding) -> list[TextEdit]:
    """The edits of the fix of ``finding`` (lines relative to its chunk) in the whole snapshot."""
    try:
        return _fix_edits_from_partial(snapshot, position, finding)
    except _FallBack as reason:
        logger.warning("building a fix of %s from a whole-file lint: %s", snapshot.path, reason)
    except Exception:
        logger.exception("building a fix of %s from a whole-file lint", snapshot.path)
    line = finding.line + snapshot.chunks[position].start_line
    end_line = finding.end_line + snapshot.chunks[position].start_line
    for candidate in lint_source(
        snapshot.source, snapshot.path, codes=snapshot.codes, entrypoints=snapshot.entrypoints
    ):
        if (
            candidate.code == finding.code
            and (candidate.line, candidate.column) == (line, finding.column)
            and (candidate.end_line, candidate.end_column) == (end_line, finding.end_column)
            and candidate.message == finding.message
        ):
            return candidate.fix.edits if candidate.fix is not None else []
    return []


def _fix_edits_from_partial(snapshot: _Snapshot, position: int, finding: Finding) -> list[TextEdit]:
    whole = _whole_module(snapshot.source)
    included = DependencyIndex(snapshot.chunks, snapshot.entrypoints).needed(position)
    partial = _partial(snapshot.layout, snapshot.chunks, included)
    # Only the finding's rule: rules do not see each other's findings.
    context = _lint_partial(
        partial, snapshot.layout, snapshot.path, {finding.code}, snapshot.entrypoints, whole
    )
    first = partial.lines[included.index(position)]
    for candidate in context.findings:
        if (
            candidate.line - first == finding.line
            and candidate.column == finding.column
            and candidate.end_line - candidate.line == finding.end_line - finding.line
            and candidate.end_column == finding.end_column
            and candidate.message == finding.message
            and candidate.fix is not None
        ):
            changes, imports = context.rewrites[id(candidate.fix)]
            break
    else:
        raise _FallBack("the finding is not found again in its partial module")
    try:
        module = context.wrapper.module
        rewritten = module.visit(_Replace(changes))
        replacements = _replacements(partial, snapshot.chunks, module, rewritten)
        new_source = _apply(snapshot.source, replacements)
        new_module = cst.parse_module(new_source)
        if imports:
            if _insertion_index(new_module) == 0 and any(
                chunk == 0 for chunk, _, _, _ in replacements
            ):
                # The import would take over the first statement's leading lines, which
                # the rewrite of that statement may have moved: only the whole file knows.
                raise _FallBack("the import goes above a rewritten first statement")
            for dotted in imports:
                new_module = ensure_import(new_module, dotted)
            new_source = new_module.code
    except _FallBack:
        raise
    except Exception:
        logger.exception("could not build the fix of %s in %s", finding.code, snapshot.path)
        return []
    return diff_edits(snapshot.source, new_source)


_last_whole: tuple[str, cst.Module] | None = None
_last_whole_lock = threading.Lock()


def _whole_module(source: str) -> cst.Module:
    """``source`` parsed, the last one kept: an editor asks for the fixes of a line at once."""
    global _last_whole
    with _last_whole_lock:
        if _last_whole is not None and _last_whole[0] == source:
            return _last_whole[1]
    module = cst.parse_module(source)
    with _last_whole_lock:
        _last_whole = (source, module)
    return module


def _replacements(
    partial: _Partial, chunks: Sequence[Chunk], module: cst.Module, rewritten: cst.Module
) -> list[tuple[int, int, int, str]]:
    """The rewrite as (chunk, start, end, new text), offsets in the file, one per changed statement.

    Each changed top-level statement is compared with its rewrite, the common
    beginning and end trimmed off; what remains must lie inside the chunk that
    holds the statement (a statement's leading blank lines may come from the
    chunk before it in the partial module, which is not the one before it in
    the file).
    """
    if len(rewritten.body) != len(module.body):
        raise _FallBack("the rewrite adds or removes top-level statements")
    found = []
    offset = 0
    for old, new in zip(module.body, rewritten.body):
        old_code = module.code_for_node(old)
        if partial.text[offset : offset + len(old_code)] != old_code:
            raise _FallBack("a statement's text is not where it was expected")
        new_code = module.code_for_node(new)
        if new_code != old_code:
            prefix = _common_prefix(old_code, new_code)
            suffix = _common_suffix(old_code[prefix:], new_code[prefix:])
            start, end = offset + prefix, offset + len(old_code) - suffix
            text = new_code[prefix : len(new_code) - suffix]
            slot = _slot_of(partial, offset + len(old_code) - 1)
            if slot is None:
                raise _FallBack("the header of the partial module was rewritten")
            chunk_start = partial.offsets[slot]
            chunk = chunks[partial.chunks[slot]]
            if not (chunk_start <= start and end <= chunk_start + len(chunk.text)):
                raise _FallBack("a rewrite spans two chunks")
            found.append(
                (
                    partial.chunks[slot],
                    chunk.start_offset + start - chunk_start,
                    chunk.start_offset + end - chunk_start,
                    text,
                )
            )
        offset += len(old_code)
    return found


def _slot_of(partial: _Partial, offset: int) -> int | None:
    slot = None
    for index, start in enumerate(partial.offsets):
        if start <= offset:
            slot = index
    return slot


def _common_prefix(a: str, b: str) -> int:
    limit = min(len(a), len(b))
    index = 0
    while index < limit and a[index] == b[index]:
        index += 1
    return index


def _common_suffix(a: str, b: str) -> int:
    limit = min(len(a), len(b))
    index = 0
    while index < limit and a[-1 - index] == b[-1 - index]:
        index += 1
    return index


def _apply(source: str, replacements: list[tuple[int, int, int, str]]) -> str:
    for _, start, end, text in sorted(replacements, key=lambda r: r[1], reverse=True):
        source = source[:start] + text + source[end:]
    return source
