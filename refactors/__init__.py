"""fullgraph.refactors — static graph-break rules with proven-safe fixes, and hybridization.

    from fullgraph.refactors import lint_source, fix_source, RULES

``lint_source`` reports :class:`Finding` values (stable ``FG1xx`` codes, exact
positions, a :class:`Fix` of minimal :class:`TextEdit` values when the rewrite
is proven safe, else a ``refusal_reason``); ``fix_source`` applies every safe
fix.  :class:`IncrementalLinter` gives ``lint_source``'s findings for successive
versions of one document, re-linting only what an edit reaches (the language
server keeps one per open document).  See ``docs/refactors.md`` and ``docs/rules/``.
"""

from .engine import fix_source, lint_source
from .findings import Finding, Fix, SourceSyntaxError, TextEdit
from .incremental import IncrementalLinter
from .rules import RULES
from .text_edits import apply_edits
from .workspace import workspace_entrypoints

__all__ = [
    "RULES",
    "Finding",
    "Fix",
    "IncrementalLinter",
    "SourceSyntaxError",
    "TextEdit",
    "apply_edits",
    "fix_source",
    "lint_source",
    "workspace_entrypoints",
]
