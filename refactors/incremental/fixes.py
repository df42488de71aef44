"""Building the fix of a finding the incremental linter reported, from the whole file.

The rule runs again on the finding's partial module, this time seeing the
whole module for the names a rewrite must not reuse and for the import
aliases; the rewritten statements are put back into the file, and a needed
import is added to the whole module.  When that cannot be done exactly (a
rewrite that spans chunks), the fix is taken from a whole-file lint instead,
which is slow but right.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

import libcst as cst

from ..context import Replace
from ..engine import lint_source
from ..findings import Finding, TextEdit
from ..imports import ensure_import, insertion_index
from ..text_edits import diff_edits
from .chunking import Chunk, DependencyIndex
from .partial import FallBack, Partial, Snapshot, build_partial, lint_partial

logger = logging.getLogger(__name__)


def fix_edits(snapshot: Snapshot, position: int, finding: Finding) -> list[TextEdit]:
    """The edits of the fix of ``finding`` (lines relative to its chunk) in the whole snapshot."""
    try:
        return _fix_edits_from_partial(snapshot, position, finding)
    except FallBack as reason:
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


def _fix_edits_from_partial(snapshot: Snapshot, position: int, finding: Finding) -> list[TextEdit]:
    whole = _whole_module(snapshot.source)
    included = DependencyIndex(snapshot.chunks, snapshot.entrypoints).needed(position)
    partial = build_partial(snapshot.layout, snapshot.chunks, included)
    # Only the finding's rule: rules do not see each other's findings.
    context = lint_partial(
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
        raise FallBack("the finding is not found again in its partial module")
    try:
        module = context.wrapper.module
        rewritten = module.visit(Replace(changes))
        replacements = _replacements(partial, snapshot.chunks, module, rewritten)
        new_source = _apply(snapshot.source, replacements)
        new_module = cst.parse_module(new_source)
        if imports:
            if insertion_index(new_module) == 0 and any(
                chunk == 0 for chunk, _, _, _ in replacements
            ):
                # The import would take over the first statement's leading lines, which
                # the rewrite of that statement may have moved: only the whole file knows.
                raise FallBack("the import goes above a rewritten first statement")
            for dotted in imports:
                new_module = ensure_import(new_module, dotted)
            new_source = new_module.code
    except FallBack:
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
    partial: Partial, chunks: Sequence[Chunk], module: cst.Module, rewritten: cst.Module
) -> list[tuple[int, int, int, str]]:
    """The rewrite as (chunk, start, end, new text), offsets in the file, one per changed statement.

    Each changed top-level statement is compared with its rewrite, the common
    beginning and end trimmed off; what remains must lie inside the chunk that
    holds the statement (a statement's leading blank lines may come from the
    chunk before it in the partial module, which is not the one before it in
    the file).
    """
    if len(rewritten.body) != len(module.body):
        raise FallBack("the rewrite adds or removes top-level statements")
    found = []
    offset = 0
    for old, new in zip(module.body, rewritten.body):
        old_code = module.code_for_node(old)
        if partial.text[offset : offset + len(old_code)] != old_code:
            raise FallBack("a statement's text is not where it was expected")
        new_code = module.code_for_node(new)
        if new_code != old_code:
            prefix = _common_prefix(old_code, new_code)
            suffix = _common_suffix(old_code[prefix:], new_code[prefix:])
            start, end = offset + prefix, offset + len(old_code) - suffix
            text = new_code[prefix : len(new_code) - suffix]
            slot = _slot_of(partial, offset + len(old_code) - 1)
            if slot is None:
                raise FallBack("the header of the partial module was rewritten")
            chunk_start = partial.offsets[slot]
            chunk = chunks[partial.chunks[slot]]
            if not (chunk_start <= start and end <= chunk_start + len(chunk.text)):
                raise FallBack("a rewrite spans two chunks")
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


def _slot_of(partial: Partial, offset: int) -> int | None:
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
