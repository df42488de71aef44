"""fullgraph.refactors — static graph-break rules with proven-safe fixes, and hybridization.

    from fullgraph.refactors import lint_source, fix_source, RULES

``lint_source`` reports :class:`Finding` values (stable ``FG1xx`` codes, exact
positions, a :class:`Fix` of minimal :class:`TextEdit` values when the rewrite
is proven safe, else a ``refusal_reason``); ``fix_source`` applies every safe
fix.  See ``docs/refactors.md`` and ``docs/rules/``.
"""

from .engine import fix_source, lint_source
from .findings import Finding, Fix, SourceSyntaxError, TextEdit
from .rules import RULES
from .text_edits import apply_edits

__all__ = [
    "RULES",
    "Finding",
    "Fix",
    "SourceSyntaxError",
    "TextEdit",
    "apply_edits",
    "fix_source",
    "lint_source",
]
