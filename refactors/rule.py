"""The rule base class: a rule is data (code, message, docs, examples) plus one libcst visitor.

Written in the style of Fixit: the VALID and INVALID examples embedded in a
rule are its specification.  Unit tests (``tests/refactors/test_rule_examples.py``)
and the rule's page under ``docs/rules/`` are generated from them, and whether a
rule "has a fix" is derived from its examples, never set by hand.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, ClassVar

import libcst as cst

from .findings import Severity

if TYPE_CHECKING:
    from .context import RuleContext


@dataclasses.dataclass(frozen=True)
class Valid:
    """Source on which the rule must report nothing."""

    code: str


@dataclasses.dataclass(frozen=True)
class Invalid:
    """Source on which the rule must report.

    ``expected_replacement`` is the whole source after the rule's fix; ``None``
    means no fix may be offered.  ``refusal`` is a fragment that must appear in
    the finding's refusal reason (or message, for report-only rules).
    """

    code: str
    expected_replacement: str | None = None
    refusal: str | None = None
    line: int | None = None
    column: int | None = None


# A statement or expression replacement; statements may become several statements.  A
# callable gets the node as the changes inside it left it and returns its replacement;
# fixes that make equal callable changes to one node merge (``fix_source`` applies them
# in one rewrite).
Replacement = (
    cst.CSTNode | cst.FlattenSentinel | cst.RemovalSentinel | Callable[[cst.CSTNode], cst.CSTNode]
)


class Rule(cst.BatchableCSTVisitor):
    """Base class of every static rule; subclasses fill in the class attributes.

    Rules are batchable visitors: the engine walks the module once for all of
    them, so a ``visit_*`` method cannot skip a subtree (its return value is
    ignored); a rule that needs a scoped walk runs its own small visitor.
    """

    CODE: ClassVar[str]
    NAME: ClassVar[str]
    MESSAGE: ClassVar[str]
    # Used inside a compiled region; outside one the finding is a hint only.
    SEVERITY: ClassVar[Severity] = "warning"
    WHAT_IT_DOES: ClassVar[str]
    WHY_IS_THIS_BAD: ClassVar[str]
    FIX_SAFETY: ClassVar[str]
    # For report-only rules: what to write instead (there is no expected replacement).
    USE_INSTEAD: ClassVar[str | None] = None
    # Whether ``fix_source`` applies this rule's fixes when no codes are selected.  Off
    # for fixes that opt code into something (compilation) rather than remove a break.
    APPLY_BY_DEFAULT: ClassVar[bool] = True
    VALID: ClassVar[Sequence[Valid]] = ()
    INVALID: ClassVar[Sequence[Invalid]] = ()

    # None: rules read metadata through their ``context`` (RuleContext), which resolves
    # what it needs once; declaring providers here would make every walk resolve them.
    METADATA_DEPENDENCIES = ()

    def __init__(self, context: RuleContext) -> None:
        super().__init__()
        self.context = context

    # The names of a class's visit_*/leave_* methods, found once per class.
    _VISITOR_NAMES: ClassVar[dict[type, tuple[str, ...]]] = {}

    def get_visitors(self):
        # libcst finds them with inspect.getmembers on every walk, going through the
        # hundreds of no-op stubs of CSTVisitor each time: a few ms per rule per lint,
        # which the language server pays on every edit.
        names = Rule._VISITOR_NAMES.get(type(self))
        if names is None:
            names = Rule._VISITOR_NAMES[type(self)] = tuple(super().get_visitors())
        return {name: getattr(self, name) for name in names}

    @classmethod
    def has_fix(cls) -> bool:
        return any(case.expected_replacement is not None for case in cls.INVALID)

    def report(
        self,
        node: cst.CSTNode,
        message: str | None = None,
        *,
        changes: dict[cst.CSTNode, Replacement] | None = None,
        imports: Sequence[str] = (),
        fix_title: str | None = None,
        refusal_reason: str | None = None,
        severity: Severity | None = None,
    ) -> None:
        """Record a finding at ``node``'s range; ``changes`` (original node -> new node) make the fix."""
        self.context.add_finding(
            self,
            node,
            message or self.MESSAGE,
            changes=changes,
            imports=imports,
            fix_title=fix_title,
            refusal_reason=refusal_reason,
            severity=severity,
        )
