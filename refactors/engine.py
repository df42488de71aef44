"""The public entry points: lint a source text, or apply every safe fix to it."""

from __future__ import annotations

import logging
from collections.abc import Collection

import libcst as cst
import libcst.metadata as meta

from .context import RuleContext
from .findings import Finding, SourceSyntaxError
from .rules import RULES
from .text_edits import apply_edits

logger = logging.getLogger(__name__)

# A fix that does not remove its own finding must not loop forever.
_MAX_FIX_ROUNDS = 200


def _parse(source: str, path: str) -> cst.Module:
    try:
        return cst.parse_module(source)
    except cst.ParserSyntaxError as error:
        # CPython's own message and position are the ones users know from running the file.
        try:
            compile(source, path, "exec", dont_inherit=True)
        except SyntaxError as python_error:
            raise SourceSyntaxError(
                python_error.msg, python_error.lineno or 1, max((python_error.offset or 1) - 1, 0)
            ) from None
        except ValueError:  # null bytes: libcst's report is all there is
            pass
        raise SourceSyntaxError(error.message, error.raw_line, error.raw_column) from None


def lint_source(
    source: str,
    path: str = "<string>",
    *,
    codes: Collection[str] | None = None,
    entrypoints: Collection[str] = (),
) -> list[Finding]:
    """Run the rules (all, or those in ``codes``) on ``source``; findings sorted by position.

    ``entrypoints`` are qualified names of functions in this file that the
    user compiles; their call trees count as compiled regions.
    """
    module = _parse(source, path)
    if "torch" not in source:
        # Every rule is about torch code; skip the costly name resolution elsewhere.
        return []
    # The module was parsed for this run alone: the wrapper need not copy it.
    wrapper = meta.MetadataWrapper(module, unsafe_skip_copy=True)
    context = RuleContext(source, path, wrapper, entrypoints)
    run_rules(context, codes)
    return sorted(context.findings, key=lambda f: (f.line, f.column, f.code))


def run_rules(context: RuleContext, codes: Collection[str] | None = None) -> None:
    """Run the rules (all, or those in ``codes``) over ``context``'s module into its findings."""
    selected = [rule for code, rule in RULES.items() if codes is None or code in codes]
    wrapper, path = context.wrapper, context.path
    try:
        # One walk of the tree for every rule (they are batchable visitors).
        wrapper.visit_batched([rule(context) for rule in selected])
    except Exception:
        logger.exception("a rule failed on %s; running the rules one by one", path)
        context.findings.clear()
        for rule in selected:
            try:
                wrapper.visit_batched([rule(context)])
            except Exception:
                logger.exception("rule %s failed on %s and was skipped", rule.CODE, path)


def fix_source(
    source: str,
    path: str = "<string>",
    codes: set[str] | None = None,
    *,
    entrypoints: Collection[str] = (),
) -> str:
    """``source`` with every safe fix applied (only fixes of ``codes`` when given); idempotent.

    Without ``codes``, rules whose fix opts code into something rather than removing
    a break (hybridization, FG106) are left out; select them by code.
    """
    if codes is None:
        codes = {code for code, rule in RULES.items() if rule.APPLY_BY_DEFAULT}
    seen = {source}
    for _ in range(_MAX_FIX_ROUNDS):
        findings = lint_source(source, path, codes=codes, entrypoints=entrypoints)
        fixable = next((f for f in findings if f.fix is not None and f.fix.edits), None)
        if fixable is None:
            break
        # One fix per round: the next fix is computed on the rewritten text, so
        # fixes that touch the same lines (imports, decorators) never collide.
        rewritten = apply_edits(source, fixable.fix.edits)
        if rewritten in seen:
            break
        seen.add(rewritten)
        source = rewritten
    return source
