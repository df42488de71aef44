"""Where a tensor the graph tape meets comes from.

Tensors are tracked by identity while the run holds them (``GraphTape.producer``):
each is the output of a graph node, an external tensor with a source, a value
returned by a callout, or a symbolic Python scalar lifted into a graph.  The mock
writes each origin as an expression (``record/mock_values.py``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch.fx

from fullgraph.runtime.sources import Source


@dataclasses.dataclass(frozen=True)
class NodeOrigin:
    """A tensor computed by node ``node`` of segment ``segment``."""

    segment: int
    node: torch.fx.Node


@dataclasses.dataclass(frozen=True)
class ExternalOrigin:
    """A tensor that existed before the call, reached through ``source``."""

    source: Source


@dataclasses.dataclass(frozen=True)
class CalloutOrigin:
    """A value returned by callout ``index`` (``path``: position inside its result)."""

    index: int
    path: tuple = ()


@dataclasses.dataclass(frozen=True)
class LiftedOrigin:
    """A symbolic Python scalar passed to the graph as a 0-d tensor."""

    sym: Any


Origin = NodeOrigin | ExternalOrigin | CalloutOrigin | LiftedOrigin
