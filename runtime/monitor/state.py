"""Plain data a monitoring run collects: per-frame monitor state, and mutations."""

from __future__ import annotations

import dataclasses
import dis
import types
from collections.abc import Callable
from typing import Any

from fullgraph.runtime.sources import Source


@dataclasses.dataclass
class FrameState:
    frame: types.FrameType
    pending: Callable[[], None] | None = None
    taint_pending: Callable[[], None] | None = None
    kwnames: tuple | None = None
    instruction: dis.Instruction | None = None
    # symbolic scalars (see ``taint``): one entry per stack slot, and per fast local
    shadow: list = dataclasses.field(default_factory=list)
    local_syms: dict = dataclasses.field(default_factory=dict)
    call_syms: list | None = None
    call_result_sym: Any = None


@dataclasses.dataclass
class Mutation:
    """An external object the program changed; the mock re-applies the final state."""

    # "setattr" | "delattr" | "setitem" | "delitem" | "setglobal" | "setcell" | "call"
    # (a method of ``owner``) | "function" (``name`` is a function changing ``owner``)
    kind: str
    target: Source
    owner: Any  # the object mutated (kept alive)
    name: Any = None  # attribute name, item key, global name, or method name
    args: tuple = ()
    kwargs: dict = dataclasses.field(default_factory=dict)
    # For "call": symbolic arguments by position in ``args`` (a duration, a counter):
    # the mock passes each call's value, not the monitored call's.
    arg_syms: dict = dataclasses.field(default_factory=dict)

    def describe(self) -> str:
        if self.kind in ("setattr", "setglobal"):
            return (
                f"store {self.target.expr()}.{self.name}"
                if self.kind == "setattr"
                else f"store global {self.name}"
            )
        if self.kind == "setitem":
            return f"store {self.target.expr()}[{self.name!r}]"
        if self.kind == "call":
            return f"call {self.target.expr()}.{self.name}(...)"
        if self.kind == "function":
            return (
                f"call {getattr(self.name, '__qualname__', self.name)}({self.target.expr()}, ...)"
            )
        return f"{self.kind} {self.target.expr()} {self.name or ''}".strip()
