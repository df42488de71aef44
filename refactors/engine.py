"""Linting a source text: parse it, build its rule context, run the rules over it.

Applying the fixes is :mod:`fullgraph.refactors.fixing`; linting again after an
edit is :mod:`fullgraph.refactors.incremental`.
"""

from __future__ import annotations

import logging
from collections.abc import Collection

import libcst as cst
import libcst.metadata as meta

from .context import RuleContext
from .findings import Finding, SourceSyntaxError
from .rules import RULES

logger = logging.getLogger(__name__)


def parse_source(source: str, path: str) -> cst.Module:
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
    user compiles; their call trees count as compiled regions.  A mapping gives
    each the reason shown (``workspace_entrypoints``: called from a compiled
    function in another file).
    """
    findings, _ = lint_with_context(source, path, codes, entrypoints)
    return findings


def lint_with_context(
    source: str, path: str, codes: Collection[str] | None, entrypoints: Collection[str]
) -> tuple[list[Finding], RuleContext | None]:
    """``lint_source``'s findings and the context they came from (None: no rule ran)."""
    module = parse_source(source, path)
    if "torch" not in source and not entrypoints:
        # Every rule is about torch code; skip the costly name resolution elsewhere (a
        # file whose functions compiled code calls is torch code even without the name).
        return [], None
    # The module was parsed for this run alone: the wrapper need not copy it.
    wrapper = meta.MetadataWrapper(module, unsafe_skip_copy=True)
    context = RuleContext(source, path, wrapper, entrypoints)
    run_rules(context, codes)
    return sorted(context.findings, key=lambda f: (f.line, f.column, f.code)), context


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
