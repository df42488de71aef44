"""How the mock writes a value of the run as an expression, and an effect as a statement.

``MockWriter`` turns what the monitored run saw into text for the mock: a tensor
by its origin (an input, a graph's output, a callout's result, a lifted
scalar), a value the program built by rebuilding it (tuples, lists, dicts,
dataclasses, named tuples, plain objects), a symbolic scalar by its expression,
and each mutation of an external object as the store that re-applies it.
``record/mock.py`` orders these into the mock's body.
"""

from __future__ import annotations

import ast
import collections
import dataclasses
import functools
import itertools
import re
import types
from typing import Any

import torch

from fullgraph.runtime import breaks
from fullgraph.runtime.capture.origins import (
    CalloutOrigin,
    ExternalOrigin,
    LiftedOrigin,
    NodeOrigin,
)
from fullgraph.runtime.capture.segments import Unsupported
from fullgraph.runtime.capture.tape import GraphTape
from fullgraph.runtime.capture.values import is_numpy_scalar, lifted_dtype
from fullgraph.runtime.monitor import user_code
from fullgraph.runtime.monitor.module_walks import ModuleWalk
from fullgraph.runtime.monitor.state import Mutation, is_mapping, state_group
from fullgraph.runtime.monitor.stored_state import current_state
from fullgraph.runtime.record.codegen import Namespace, is_literal, literal
from fullgraph.runtime.record.mock_support import (
    GROWING_METHODS,
    HELPERS,
    UNDOABLE_CONTAINERS,
)
from fullgraph.runtime.sources import AttrSource, ItemSource, Source, key_text
from fullgraph.runtime.symbolic.sizes import SizeInt, holds_size


@dataclasses.dataclass
class Symbols:
    """Where symbolic scalars ended up: container items, stores, the return value."""

    containers: dict = dataclasses.field(default_factory=dict)
    stores: dict = dataclasses.field(default_factory=dict)
    result: tuple | None = None


def _slot_names(cls: type) -> list[str]:
    names = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        names.extend([slots] if isinstance(slots, str) else slots)
    return [n for n in names if n not in ("__dict__", "__weakref__")]


def _object_state(value: Any) -> dict | None:
    """Attributes of a plain object (``__dict__`` and slots), or None if it has neither."""
    state = dict(getattr(value, "__dict__", {}) or {})
    for name in _slot_names(type(value)):
        if hasattr(value, name):
            state[name] = getattr(value, name)
    if not state and not hasattr(value, "__dict__"):
        return None
    return state


@dataclasses.dataclass
class Effect:
    """One mutation as mock statements: ``position``, the callout it must come before
    (None: after every callout); ``shadow``, the location it replaces and the local
    holding what was there; ``undoable``: a miss after it can take it back."""

    position: int | None
    lines: list = dataclasses.field(default_factory=list)
    shadow: tuple | None = None
    undoable: bool = True
    temps: list = dataclasses.field(default_factory=list)  # the locals its value needs


class MockWriter:
    """The mock's text for the values and effects of one record (``lines``: the locals
    computed on the way, ``effects``: the stores, made after every value)."""

    def __init__(
        self,
        tape: GraphTape,
        sources: dict[int, Source],
        ns: Namespace,
        input_index: dict[Source, int],
        symbols: Symbols | None = None,
        names: itertools.count | None = None,
    ):
        self.symbols = symbols or Symbols()
        self.tape = tape
        self.sources = sources
        self.ns = ns
        self.input_index = input_index
        self.lines: list[str] = []
        self.effects: list[str] = []  # stores into external objects, after every value is computed
        self.memo: dict[int, str] = {}
        self.names = names if names is not None else itertools.count()  # r0, r1...: shared
        # (location, local): a location a store applied earlier in the mock replaced, and
        # the local holding what was there before: a value the program read from it
        # before its store is that one, not what the location holds now.
        self.shadows: list[tuple[str, str]] = []
        self.callout_results: dict[int, str] = {}
        self.tensor_overrides: dict[int, str] = {}  # set while a callout's arguments render
        # Set while a store the mock makes before the callout at this position renders:
        # its tensors as they were then, not as the run left them (F171).
        self.before: int | None = None
        ns.values.update(HELPERS)

    # -- values ----------------------------------------------------------------
    def tensor(self, tensor: torch.Tensor) -> str:
        if id(tensor) in self.tensor_overrides:  # a callout's argument, as it was then
            return self.tensor_overrides[id(tensor)]
        origin = self.tape.use_for_output(tensor, self.before)
        return self.origin_expr(origin)

    def origin_expr(self, origin) -> str:
        if isinstance(origin, ExternalOrigin):
            index = self.input_index.get(origin.source)
            return f"I[{index}]" if index is not None else self.unshadow(origin.source.expr())
        if isinstance(origin, NodeOrigin):
            segment = self.tape.segments[origin.segment]
            return f"g{origin.segment}[{segment.output_index(origin.node)}]"
        if isinstance(origin, LiftedOrigin):
            dtype = lifted_dtype(origin.sym.value)  # as lifted_tensor made it at record time
            keyword = f", dtype={literal(dtype)}" if dtype is not None else ""
            # Read through the locals of the stores made before it (`step += 1; print(x);
            # x * step`): the location already holds the new value there.
            return f"torch.tensor({self.unshadow(origin.sym.expr())}{keyword})"
        if isinstance(origin, CalloutOrigin):
            callout = self.tape.callouts[origin.index]
            if isinstance(callout.result, torch.Tensor):
                return f"c{origin.index}"
            return f"leaves(c{origin.index})[{origin.path[0]}]"
        raise AssertionError(origin)

    def value(self, value: Any) -> str:
        if isinstance(value, torch.Tensor):
            return self.tensor(value)
        if isinstance(value, SizeInt):
            # A size that varies: re-read from this call's inputs (as they were at entry,
            # where a store of the mock replaced the path: ``_entry_reads``).
            return self.unshadow(value.expr.text())
        if isinstance(value, torch.Size) and holds_size(tuple(value)):
            return "torch.Size((" + "".join(self.value(item) + ", " for item in value) + "))"
        if id(value) in self.memo:
            return self.memo[id(value)]
        if id(value) in self.callout_results and not is_literal(value):
            return self.callout_results[id(value)]
        if type(value) is tuple and not value:
            return "()"  # one object: any path that reached an empty tuple reached this one
        source = self.sources.get(id(value))
        if source is not None:
            return self.unshadow(source.expr())
        if isinstance(value, torch.Size):  # stays a torch.Size (literal() gives a tuple)
            return f"torch.Size({literal(value)})"
        if is_numpy_scalar(value):  # np.prod(x.shape): stays an np.int64
            return f"{self.ns.name_for(type(value))}({literal(value.item())})"
        if (
            is_literal(value)
            and not isinstance(value, (list, dict, set))
            and not self._varies(value)
        ):
            return literal(value)
        if made_by_the_run(value):
            # A closure, partial or bound method the program made holds this call's
            # values: the first call's object would be handed out on every replay.
            raise _not_rebuildable(type(value))
        if isinstance(
            value, (torch.dtype, torch.device, torch.Size, type, slice, range)
        ) or callable(value):
            return self.ns.expr(value) if not isinstance(value, torch.Size) else literal(value)
        if value is Ellipsis:
            return "..."
        return self._rebuild(value)

    def _varies(self, value: Any) -> bool:
        """Whether a container of literals holds values a replay computes again
        (``.item()`` results, symbolic numbers): ``(loss.item(), 1)`` is rebuilt, not
        frozen."""
        if isinstance(value, dict):
            items = list(value.values())
        elif isinstance(value, (tuple, list)):
            items = list(value)
        else:
            return False
        if any(sym is not None for sym in self.symbols.containers.get(id(value), {}).values()):
            return True
        return any(id(item) in self.callout_results or self._varies(item) for item in items)

    def unshadow(self, expr: str) -> str:
        """``expr`` read through a location an earlier store in the mock replaced: from the
        local holding the value the program read there (a read after a store takes the
        stored value, never the location: so the first store's local is that value)."""
        for location, local in self.shadows:
            if location in expr:
                expr = re.sub(rf"(?<![\w.]){re.escape(location)}(?!\w)", local, expr)
        return expr

    def new_name(self) -> str:
        return f"r{next(self.names)}"

    def _temp(self, expr: str, value: Any) -> str:
        name = self.new_name()
        self.lines.append(f"{name} = {expr}")
        self.memo[id(value)] = name
        return name

    def _item(self, container: Any, index: Any, item: Any) -> str:
        """An element of a rebuilt container: its expression when a symbolic value was put there."""
        sym = self.symbols.containers.get(id(container), {}).get(index)
        if sym is not None and sym.value is not item:
            sym = None  # the slot was given another value after it (``L[0] = 5``)
        stored = self.symbols.stores.get((id(container), index))
        if stored is not None and stored[0] is item:
            sym = stored[1]
        return self.unshadow(sym.expr()) if sym is not None else self.value(item)

    def _rebuild(self, value: Any) -> str:
        kind = type(value)
        if kind is list:
            return self._temp(
                "[" + ", ".join(self._item(value, i, v) for i, v in enumerate(value)) + "]", value
            )
        if kind is tuple:
            items = ", ".join(self._item(value, i, v) for i, v in enumerate(value))
            return self._temp(f"({items}{',' if len(value) == 1 else ''})", value)
        if kind is dict:
            items = ", ".join(
                f"{self.value(k)}: {self._item(value, k, v)}" for k, v in value.items()
            )
            return self._temp("{" + items + "}", value)
        if kind is set:
            return self._temp(
                "{" + ", ".join(self.value(v) for v in value) + "}" if value else "set()", value
            )
        if isinstance(value, tuple) and hasattr(kind, "_fields"):
            items = ", ".join(self.value(v) for v in value)
            return self._temp(f"{self.ns.name_for(kind)}({items})", value)
        if dataclasses.is_dataclass(value):
            fields = dataclasses.fields(value)
            init = ", ".join(
                f"{f.name!r}: {self.value(getattr(value, f.name))}" for f in fields if f.init
            )
            others = ", ".join(
                f"{f.name!r}: {self.value(getattr(value, f.name))}" for f in fields if not f.init
            )
            return self._temp(
                f"make_dataclass_instance({self.ns.name_for(kind)}, {{{init}}}, {{{others}}})",
                value,
            )
        if isinstance(value, (list, dict)):  # subclasses such as OrderedDict
            return self._temp(
                f"{self.ns.name_for(kind)}({self._rebuild(kind.__mro__[-2](value))})", value
            )
        if isinstance(value, ModuleWalk):  # made again from the module it walks
            arguments = [self.value(a) for a in value.args]
            arguments += [f"{k}={self.value(v)}" for k, v in value.kwargs.items()]
            return f"{value.source.expr()}.{value.name}({', '.join(arguments)})"
        state = _object_state(value)
        if (
            state is not None
            and not isinstance(value, torch.nn.Module)
            and kind.__new__ is object.__new__
        ):
            items = ", ".join(f"{k!r}: {self.value(v)}" for k, v in state.items())
            return self._temp(f"make_plain_object({self.ns.name_for(kind)}, {{{items}}})", value)
        raise _not_rebuildable(kind)

    def stored(self, mutation: Mutation, final: Any) -> str:
        """The value a store left, computed into a local now (its expression when the
        program stored a symbolic value)."""
        entry = mutation.sym_entry
        if entry is not None and entry[0] is final:
            return self.settled(self.unshadow(entry[1].expr()))
        return self.settled(self.value(final))

    def settled(self, expr: str) -> str:
        """``expr`` evaluated before any store: a literal, a local, or a new local."""
        if expr.isidentifier() or _is_literal_text(expr):
            return expr
        name = self.new_name()
        self.lines.append(f"{name} = {expr}")
        return name

    # -- effects -----------------------------------------------------------------
    def mutation(self, mutation: Mutation, early: bool = False) -> Effect:
        """The statements re-applying ``mutation`` (the locals its value needs go to
        ``lines``).  ``early``: it comes before a callout, so it may have to be taken back
        (``U``, see ``mock_support.Undo``) and what it replaces is kept for later reads."""
        target = mutation.target.expr()
        owner, key, group = mutation.owner, mutation.name, state_group(mutation)
        effect = Effect(mutation.position if early else None)
        if group is not None:
            state = mutation.snapshot or current_state(mutation)
            present = state[0] == "value"
            final = self.stored(mutation, state[1]) if present else None
            if group == "cell":
                cell = target.removesuffix(".cell_contents")
                location, save = f"{cell}.cell_contents", f"U.cell({cell})"
                store = f"{location} = {final}" if present else f"del {location}"
            elif group == "attr":
                location, save = (
                    AttrSource(mutation.target, key).expr(),
                    f"U.attr({target}, {key!r})",
                )
                if not present and user_code.store_runs_user_code(owner, key, delete=True):
                    # The class's own __delattr__ (stepped into) made this delete with
                    # ``object.__delattr__``; its other effects are replayed on their own.
                    via = self._library_class(owner, "__delattr__")
                    store = f"discard_attr({target}, {key!r}, {via})"
                elif not present:
                    store = f"discard_attr({target}, {key!r})"
                elif user_code.store_runs_user_code(owner, key):
                    # The class's own __setattr__ (stepped into) made this store with
                    # ``object.__setattr__``; its other effects are replayed on their own.
                    via = self._library_class(owner, "__setattr__")
                    store = f"{via}.__setattr__({target}, {key!r}, {final})"
                else:
                    store = f"setattr({target}, {key!r}, {final})"
            else:
                text = key_text(key)  # torch.float32, int, 0.5: keys with text of their own
                via = self._base_for(owner, _ITEM_METHODS)
                location, save = (
                    ItemSource(mutation.target, key).expr(),
                    f"U.item({target}, {text}{via and ', ' + via})",
                )
                if present:
                    store = f"{target}[{text}] = {final}"
                    if via:
                        store = f"{via}.__setitem__({target}, {text}, {final})"
                elif not is_mapping(owner):  # an index a list store reached is in range
                    raise Unsupported(
                        breaks.UNSUPPORTED_CONSTRUCT, f"{location} is gone after its store"
                    )
                elif isinstance(owner, dict):
                    store = f"{via or target}.pop({via and target + ', '}{text}, None)"
                else:
                    store = f"discard({target}, {text})"
            if early:
                local = self.new_name()
                effect.lines.append(f"{local} = {save}  # taken back if the replay misses")
                effect.shadow = (location, local)
            effect.lines.append(store)
            return effect
        restores = ("__setitem__", "__delitem__", "clear", "update", "extend")
        via = self._base_for(owner, restores) if isinstance(owner, UNDOABLE_CONTAINERS) else ""
        if early:
            if isinstance(owner, list) and mutation.kind == "call" and key in GROWING_METHODS:
                effect.lines.append(
                    f"U.length({target}{via and ', ' + via})  # taken back if the replay misses"
                )
            elif isinstance(owner, UNDOABLE_CONTAINERS):
                effect.lines.append(
                    f"U.contents({target}{via and ', ' + via})  # taken back if the replay misses"
                )
            else:
                effect.undoable = False
        if mutation.kind == "delitem":  # del xs[i]: the items after it move up
            via = self._base_for(owner, ("__delitem__",))
            if via:
                effect.lines.append(f"{via}.__delitem__({target}, {key_text(key)})")
            else:
                effect.lines.append(f"del {target}[{key_text(key)}]")
        elif mutation.kind == "call":
            # The receiver may come first (a bound method call): the method is on it.
            skip = 1 if mutation.args and mutation.args[0] is owner else 0
            args = self._call_arguments(mutation, skip)
            via = self._base_for(owner, (mutation.name,))
            if via:
                effect.lines.append(
                    f"{via}.{mutation.name}({', '.join([target, args] if args else [target])})"
                )
            else:
                effect.lines.append(f"{target}.{mutation.name}({args})")
        elif mutation.kind == "function":  # heapq.heappop(heap): a function changing its argument
            args = self._call_arguments(mutation, 0)
            effect.lines.append(f"{self.ns.expr(mutation.name)}({args})")
        return effect

    def _base_for(self, owner: Any, methods: tuple) -> str:
        """The name the mock binds the container class a replayed effect on ``owner``
        calls the ``methods`` of, where the program overrides one of them (a ``dict``
        subclass's ``__setitem__`` that accumulates or logs: it ran under the monitor,
        and its effects, the ``super()`` store included, are replayed on their own);
        "" where ``owner``'s own methods are called."""
        kind = type(owner)
        if not any(user_code.is_program_function(getattr(kind, name, None)) for name in methods):
            return ""
        containers = (k for k in kind.__mro__ if k in UNDOABLE_CONTAINERS or k in _LIBRARY_MAPPINGS)
        base = next(containers, None)
        return self.ns.bind(base, base.__name__) if base is not None else ""

    def _library_class(self, owner: Any, method: str) -> str:
        """The name of the class whose ``method`` a replayed store calls, where the
        program's class overrides it (``object``, ``nn.Module``)."""
        klass = user_code.library_class(owner, method) or object
        return "object" if klass is object else self.ns.bind(klass, klass.__name__)

    def _call_arguments(self, mutation: Mutation, skip: int) -> str:
        """A replayed call's arguments, symbolic ones as expressions, from position ``skip``."""
        args = [
            self.unshadow(mutation.arg_syms[i].expr()) if i in mutation.arg_syms else self.value(a)
            for i, a in enumerate(mutation.args)
        ][skip:]
        args += [f"{k}={self.value(v)}" for k, v in mutation.kwargs.items()]
        return ", ".join(self.settled(a) if "=" not in a else a for a in args)


# A container's methods a replayed item store, or its undo, calls (a program's
# ``__getitem__`` that transforms would hand the undo a value that is not the item).
_ITEM_METHODS = ("__setitem__", "__delitem__", "pop", "__getitem__", "get", "__contains__")
_LIBRARY_MAPPINGS = (collections.OrderedDict, collections.defaultdict, collections.Counter)


def _is_literal_text(expr: str) -> bool:
    try:
        ast.literal_eval(expr)
        return True
    except (ValueError, SyntaxError):
        return False


def made_by_the_run(value: Any) -> bool:
    """Whether a callable with no source is one the program made during the call (a
    nested function or lambda, a partial, a method bound to an object): one that holds
    what the call computed, unlike a module-level function or a builtin."""
    if isinstance(value, functools.partial):
        return True
    if isinstance(value, types.FunctionType):
        return value.__closure__ is not None or "<locals>" in value.__qualname__
    if isinstance(value, (types.MethodType, types.BuiltinMethodType)):
        owner = getattr(value, "__self__", None)
        return owner is not None and not isinstance(owner, (types.ModuleType, type))
    return False


def _not_rebuildable(kind: type) -> Unsupported:
    return Unsupported(
        breaks.UNSUPPORTED_CONSTRUCT, f"cannot rebuild a {kind.__name__} created by the program"
    )
