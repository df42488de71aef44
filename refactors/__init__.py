"""fullgraph.refactors — static graph-break rules with proven-safe fixes, and hybridization.

    from fullgraph.refactors import lint_source, fix_source, RULES

``lint_source`` reports :class:`Finding` values (stable ``FG1xx`` codes, exact
positions, a :class:`Fix` of minimal :class:`TextEdit` values when the rewrite
is proven safe, else a ``refusal_reason``); ``fix_source`` applies every safe
fix.  :class:`IncrementalLinter` gives ``lint_source``'s findings for successive
versions of one document, re-linting only what an edit reaches (the language
server keeps one per open document).  See ``docs/refactors.md``, ``docs/rules/``
and, for the layout of the package, ``docs/architecture.md``.

The names above are imported when first read (module ``__getattr__``): a
rewritten model imports :mod:`fullgraph.refactors.support` at run time, and
that must not load libcst and the rules through this package's ``__init__``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# Public name -> the module (under this package) that defines it.
_EXPORTS = {
    "RULES": "rules",
    "Finding": "findings",
    "Fix": "findings",
    "SourceSyntaxError": "findings",
    "TextEdit": "findings",
    "IncrementalLinter": "incremental.linter",
    "apply_edits": "text_edits",
    "fix_source": "fixing",
    "lint_source": "engine",
    "workspace_entrypoints": "workspace",
}

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

if TYPE_CHECKING:
    from .engine import lint_source
    from .findings import Finding, Fix, SourceSyntaxError, TextEdit
    from .fixing import fix_source
    from .incremental.linter import IncrementalLinter
    from .rules import RULES
    from .text_edits import apply_edits
    from .workspace import workspace_entrypoints


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # read once: later reads do not come here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
