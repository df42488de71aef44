"""Applying every safe fix to a source text, in rounds, until nothing more applies."""

from __future__ import annotations

import logging
from collections.abc import Collection

from .context import RuleContext, rewrite
from .engine import lint_with_context
from .findings import Finding
from .incremental.linter import IncrementalLinter
from .rules import RULES
from .text_edits import apply_edits

logger = logging.getLogger(__name__)

# A fix that does not remove its own finding must not loop forever.
_MAX_FIX_ROUNDS = 200


def fix_source(
    source: str,
    path: str = "<string>",
    codes: set[str] | None = None,
    *,
    entrypoints: Collection[str] = (),
) -> str:
    """``source`` with every safe fix applied (only fixes of ``codes`` when given); idempotent.

    Without ``codes``, rules whose fix opts code into something rather than removing
    a break (hybridization, FG106) are left out; select them by code.  Only the
    findings that ``fullgraph check`` reports are fixed: a finding outside a compiled
    region is a hint (no break is known there), and its fix stays a quick fix an
    editor offers; opt-in rules apply wherever they are selected.

    Each round lints once and applies every fix of the round that does not overlap
    an earlier one in one rewrite; overlapping fixes wait for the next round, which
    lints the rewritten text.
    """
    if codes is None:
        codes = {code for code, rule in RULES.items() if rule.APPLY_BY_DEFAULT}

    # After a round, whether the rewritten file has more to fix is asked of a linter
    # that knows the findings before the round: it re-lints only the rewritten chunks
    # and what depends on them, not the whole file again.
    linter = IncrementalLinter(path, codes=codes, entrypoints=entrypoints)
    seen = {source}
    for round_number in range(_MAX_FIX_ROUNDS):
        if round_number > 0:
            try:
                more = [f for f in linter.lint(source) if f.fix is not None and _applies(f)]
            except Exception:
                logger.exception("the incremental check of a fix round failed on %s", path)
                more = True
            if not more:
                break
        findings, context = lint_with_context(source, path, codes, entrypoints)
        fixable = [f for f in findings if f.fix is not None and _applies(f)]
        if not fixable or context is None:
            break
        linter.seed(source, findings)
        rewritten = _apply_round(source, context, fixable)
        if rewritten is None or rewritten in seen:
            break
        seen.add(rewritten)
        source = rewritten
    return source


def _applies(finding: Finding) -> bool:
    return finding.severity != "hint" or not RULES[finding.code].APPLY_BY_DEFAULT


def _apply_round(source: str, context: RuleContext, fixable: list[Finding]) -> str | None:
    """``source`` with the non-overlapping fixes of ``fixable`` applied together."""
    changes: dict = {}
    imports: list[str] = []
    replaced: set = set()  # nodes whose whole subtree a taken change rewrites
    inside: set = set()  # every ancestor of a taken change's node
    for finding in fixable:
        fix = finding.fix
        if fix.changes is None or not _fits(fix.changes, changes, replaced, inside, context):
            continue
        changes.update(fix.changes)
        imports.extend(fix.imports)
        for node, replacement in fix.changes.items():
            if not callable(replacement):
                replaced.add(node)
            inside.update(_ancestors(node, context))
    if changes:
        try:
            return rewrite(context.module, changes, imports, context.parent)
        except Exception:
            logger.exception("the merged fixes of %s could not be built; fixing one", context.path)
    # One fix alone, as its own edits say (the rule built it; a failure is no edits).
    first = next((f for f in fixable if f.fix.edits), None)
    return apply_edits(source, first.fix.edits) if first is not None else None


def _ancestors(node, context: RuleContext) -> list:
    found = []
    parent = context.parent(node)
    while parent is not None:
        found.append(parent)
        parent = context.parent(parent)
    return found


def _fits(new: dict, taken: dict, replaced: set, inside: set, context: RuleContext) -> bool:
    """Whether the changes ``new`` touch nothing the ``taken`` changes rewrite."""
    for node, replacement in new.items():
        if node in taken:
            if taken[node] != replacement or not callable(replacement):
                return False
            continue
        if any(ancestor in replaced for ancestor in _ancestors(node, context)):
            return False
        if not callable(replacement) and node in inside:
            return False
    return True
