"""The place of a rewrite, as the rules hand it to the plans, and how a plan says no.

A :class:`RewriteSite` gathers what the analyses know about one ``if`` (or one
conditional expression) in one function; :func:`~.predication.plan`
(``torch.where``) and :func:`~.cond_form.plan_cond` (``torch.cond``) take the
same one.  A failed condition of legality raises :class:`Refusal`, whose
message the finding shows; :class:`Unspeculatable` says the only obstacle is a
branch that must not run untaken, so the ``torch.cond`` form may still apply.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

import libcst as cst

from ..analyses.layers import Layer
from ..analyses.tensor_types import TensorTypes


class Refusal(Exception):
    """The rewrite is not proven safe; the message says which condition failed."""


class Unspeculatable(Refusal):
    """A branch could fault or have an effect when not taken (``torch.cond`` may still apply)."""


@dataclasses.dataclass(frozen=True)
class RewriteSite:
    """What a plan may rely on about the code around the ``if`` it rewrites."""

    # Strict tensor kinds of the enclosing function (never the ``likely`` ones).
    types: TensorTypes
    # Qualified names of a node (``torch.where`` however it is imported) and its source text.
    qualified_names: Callable[[cst.CSTNode], set[str]]
    code: Callable[[cst.CSTNode], str]
    # Names read after the ``if`` (a branch's other names are temporaries, never selected).
    live: set[str]
    # Names bound before the ``if``: a name one branch leaves alone keeps that value.
    defined_before: set[str]
    # Names the new code must not take (the function's and the module's).
    taken_names: set[str]
    # ``self.<attr>`` -> the torch.nn layer the class builds there (empty outside a class).
    layers: Mapping[str, Layer] = dataclasses.field(default_factory=dict)
