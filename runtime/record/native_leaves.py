"""How the native guard tree checks one guard check without running its Python."""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class NativeLeaf:
    """How native evaluation checks a :class:`Check` without running its Python.

    ``kind``: ``"id"`` (the value is ``value``), ``"equals"`` (same type and
    equal), ``"type"`` (``type(v) is value``), ``"tensor"`` (the
    ``TensorMeta`` ``value``; ``dynamic``: dimensions whose size is not
    checked), ``"no_hooks"``, ``"method"`` (``v.__func__ is value``),
    ``"alias"`` (the check's two sources are one object), ``"signature"``
    (``value``: the positional count and keyword names) or ``"covered"``
    (implied by the signature's leaf).
    """

    kind: str
    value: Any = None
    dynamic: frozenset = frozenset()
