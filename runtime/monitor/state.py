"""Plain data a monitoring run collects: per-frame monitor state, and mutations."""

from __future__ import annotations

import dataclasses
import dis
import types
from collections.abc import Callable, Mapping
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
    call_values: list | None = None  # the objects of those operands (passed_syms.py)
    call_result_sym: Any = None
    # (number, symbol) a callee this frame called returned (taint._return_value): the
    # caller's call instruction takes it, or it is guarded by value.
    returned: tuple | None = None
    # A program attribute hook this frame runs, and the run's effect count when it
    # started (monitor/attribute_hooks.py: did it change anything?).
    hook: Any = None
    effects_at_entry: tuple = ()


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
    # Where it happened: the number of callouts made before it.  The mock applies it
    # there, before the callout that comes next (which may read it: ``opt.step()``
    # after ``group["lr"] = lr``, ``print(metrics)`` after ``metrics["loss"] = v``).
    position: int = 0
    # A store's state right after it (``("value", v)`` or ``("absent",)``), taken when the
    # owner changes again; None: the state at the end of the run.
    snapshot: tuple | None = None
    # ``store_syms``' entry (value, Sym) when the store was made: a symbolic value.
    sym_entry: tuple | None = None

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


def is_mapping(owner: Any) -> bool:
    """A container whose ``key in owner`` tests keys (a dict, ``ModuleDict``), not values."""
    return isinstance(owner, Mapping) or (
        hasattr(type(owner), "keys") and hasattr(type(owner), "__contains__")
    )


def state_group(mutation: Mutation) -> str | None:
    """What a mutation sets, for a store the mock writes as the state it left ("attr",
    "item", "cell"); None for an action replayed as made (a method call, ``del xs[i]``,
    which shifts a list's items)."""
    kind = mutation.kind
    if kind in ("setattr", "delattr"):
        return "attr"
    if kind == "setcell":
        return "cell"
    if kind in ("setitem", "setglobal"):
        return "item"
    if kind == "delitem" and is_mapping(mutation.owner):
        return "item"
    return None
