"""The rewrites the fixes are made of: plans that turn an ``if`` into straight-line code.

A rule hands a :class:`~.site.RewriteSite` (what the analyses found about the
place of the rewrite) to :func:`.predication.plan` (``torch.where``) or
:func:`.cond_form.plan_cond` (``torch.cond``); a failed condition of legality
raises :class:`~.site.Refusal` with the reason in words.  The metadata proof
``torch.cond`` needs is :mod:`.same_metadata`, the guards of an untaken branch
(the "double where") :mod:`.untaken`.  Rewrites import analyses, never rules.
"""
