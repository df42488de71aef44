"""Mock generation: readable Python that replays a record without the interpreter.

The mock runs the compiled graph segments in order, the eager callouts
between them (checking the values later code depends on: *mid-guards*),
re-applies the side effects on external objects (attribute and item stores,
globals, container mutation; in-place tensor updates happen inside the
graphs) and rebuilds the return value: tuples, lists, dicts, dataclasses,
named tuples, plain objects, ``None`` and scalars.

Effects that print or log, when they come before a mid-guard, are held back
until the last mid-guard has passed, so a record abandoned half-way never
prints twice.
"""

from __future__ import annotations

import ast
import dataclasses
from typing import Any

import torch

from fullgraph.runtime import breaks
from fullgraph.runtime.capture.data_checks import draws_random
from fullgraph.runtime.capture.tape import (
    CalloutOrigin,
    ExternalOrigin,
    GraphTape,
    LiftedOrigin,
    NodeOrigin,
    Unsupported,
    lifted_dtype,
)
from fullgraph.runtime.monitor.state import Mutation
from fullgraph.runtime.record.codegen import Namespace, is_literal, literal
from fullgraph.runtime.record.guards import GUARD_PARAMS, IDENTITY_CHECKED, tensor_check
from fullgraph.runtime.sources import Source
from fullgraph.runtime.symbolic.sizes import SizeInt, holds_size


class Missed:
    """A replay that did not apply: the guard failed, or a mid-guard did.

    The results of the callouts the replay already made reach the caller through
    the ``made`` dict it passed to the mock, not through this object.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISS"


MISS = Missed()


def make_dataclass_instance(cls, init: dict, others: dict):
    """Rebuild a dataclass (including ``ModelOutput``-style ones) from field values."""
    obj = cls(**init)
    for name, value in others.items():
        object.__setattr__(obj, name, value)
    return obj


def make_plain_object(cls, state: dict):
    """Rebuild a plain Python object created by the program, without calling __init__."""
    obj = cls.__new__(cls)
    for name, value in state.items():
        object.__setattr__(obj, name, value)
    return obj


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


def write_back(target: torch.Tensor, value: torch.Tensor) -> None:
    """Copy a graph's in-place update of an input back into the input.

    A leaf that requires grad (a parameter updated by ``p.data = ...`` or under
    ``no_grad``) is written without autograd, as the program's update was.
    """
    if target.requires_grad and target.is_leaf:
        with torch.no_grad():
            target.copy_(value)
    else:
        target.copy_(value)


def leaves(value):
    from fullgraph.runtime.torch_internals import tree_flatten

    return tree_flatten(value)[0]


@dataclasses.dataclass
class Symbols:
    """Where symbolic scalars ended up: container items, stores, the return value."""

    containers: dict = dataclasses.field(default_factory=dict)
    stores: dict = dataclasses.field(default_factory=dict)
    result: tuple | None = None


@dataclasses.dataclass
class MockCode:
    source: str
    namespace: dict[str, Any]
    reusable: bool
    not_reusable_reason: str | None
    rerun_safe: bool = True  # no external tensor is updated in place before the last callout
    resume_on_miss: bool = False  # a mid-guard miss must go straight to monitoring, reusing results


class MockWriter:
    def __init__(
        self,
        tape: GraphTape,
        sources: dict[int, Source],
        ns: Namespace,
        input_index: dict[Source, int],
        symbols: Symbols | None = None,
    ):
        self.symbols = symbols or Symbols()
        self.tape = tape
        self.sources = sources
        self.ns = ns
        self.input_index = input_index
        self.lines: list[str] = []
        self.effects: list[str] = []  # stores into external objects, after every value is computed
        self.memo: dict[int, str] = {}
        self.temps = 0
        self.callout_results: dict[int, str] = {}
        self.tensor_overrides: dict[int, str] = {}  # set while a callout's arguments render
        ns.values.update(
            MISS=MISS,
            Missed=Missed,
            write_back=write_back,
            make_dataclass_instance=make_dataclass_instance,
            make_plain_object=make_plain_object,
            leaves=leaves,
            rng_state=rng_state,
            restore_rng=restore_rng,
        )

    # -- values ----------------------------------------------------------------
    def tensor(self, tensor: torch.Tensor) -> str:
        if id(tensor) in self.tensor_overrides:  # a callout's argument, as it was then
            return self.tensor_overrides[id(tensor)]
        origin = self.tape.use_for_output(tensor)
        return self.origin_expr(origin)

    def origin_expr(self, origin) -> str:
        if isinstance(origin, ExternalOrigin):
            index = self.input_index.get(origin.source)
            return f"I[{index}]" if index is not None else origin.source.expr()
        if isinstance(origin, NodeOrigin):
            segment = self.tape.segments[origin.segment]
            return f"g{origin.segment}[{segment.output_index(origin.node)}]"
        if isinstance(origin, LiftedOrigin):
            dtype = lifted_dtype(origin.sym.value)  # as lifted_tensor made it at record time
            keyword = f", dtype={literal(dtype)}" if dtype is not None else ""
            return f"torch.tensor({origin.sym.expr()}{keyword})"
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
            return value.expr.text()  # a size that varies: re-read from this call's inputs
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
            return source.expr()
        if isinstance(value, torch.Size):  # stays a torch.Size (literal() gives a tuple)
            return f"torch.Size({literal(value)})"
        if _is_numpy_scalar(value):  # np.prod(x.shape): stays an np.int64
            return f"{self.ns.name_for(type(value))}({literal(value.item())})"
        if is_literal(value) and not isinstance(value, (list, dict, set)):
            return literal(value)
        if isinstance(
            value, (torch.dtype, torch.device, torch.Size, type, slice, range)
        ) or callable(value):
            return self.ns.expr(value) if not isinstance(value, torch.Size) else literal(value)
        if value is Ellipsis:
            return "..."
        return self._rebuild(value)

    def _temp(self, expr: str, value: Any) -> str:
        name = f"r{self.temps}"
        self.temps += 1
        self.lines.append(f"{name} = {expr}")
        self.memo[id(value)] = name
        return name

    def _item(self, container: Any, index: Any, item: Any) -> str:
        """An element of a rebuilt container: its expression when a symbolic value was put there."""
        sym = self.symbols.containers.get(id(container), {}).get(index)
        stored = self.symbols.stores.get((id(container), index))
        if stored is not None and stored[0] is item:
            sym = stored[1]
        return sym.expr() if sym is not None else self.value(item)

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
        state = _object_state(value)
        if (
            state is not None
            and not isinstance(value, torch.nn.Module)
            and kind.__new__ is object.__new__
        ):
            items = ", ".join(f"{k!r}: {self.value(v)}" for k, v in state.items())
            return self._temp(f"make_plain_object({self.ns.name_for(kind)}, {{{items}}})", value)
        raise Unsupported(
            breaks.UNSUPPORTED_CONSTRUCT, f"cannot rebuild a {kind.__name__} created by the program"
        )

    def stored(self, owner: Any, key: Any, final: Any) -> str:
        """The final value at ``owner[key]``/``owner.key``, computed into a local now."""
        entry = self.symbols.stores.get((id(owner), key))
        expr = entry[1].expr() if entry is not None and entry[0] is final else self.value(final)
        return self.settled(expr)

    def settled(self, expr: str) -> str:
        """``expr`` evaluated before any store: a literal, a local, or a new local."""
        if expr.isidentifier() or _is_literal_text(expr):
            return expr
        name = f"r{self.temps}"
        self.temps += 1
        self.lines.append(f"{name} = {expr}")
        return name

    # -- effects -----------------------------------------------------------------
    def mutation(self, mutation: Mutation) -> None:
        target = mutation.target.expr()
        owner = mutation.owner
        if mutation.kind in ("setattr", "delattr"):
            if hasattr(owner, mutation.name):
                final = self.stored(owner, mutation.name, getattr(owner, mutation.name))
                self.effects.append(f"setattr({target}, {mutation.name!r}, {final})")
            else:
                self.effects.append(f"delattr({target}, {mutation.name!r})")
        elif mutation.kind in ("setitem", "delitem", "setglobal"):
            key = mutation.name
            if key in owner:
                self.effects.append(f"{target}[{key!r}] = {self.stored(owner, key, owner[key])}")
            else:
                self.effects.append(f"{target}.pop({key!r}, None)")
        elif mutation.kind == "setcell":
            final = self.settled(self.value(owner.cell_contents))
            self.effects.append(f"{target.removesuffix('.cell_contents')}.cell_contents = {final}")
        elif mutation.kind == "call":
            args = [
                mutation.arg_syms[i].expr() if i in mutation.arg_syms else self.value(a)
                for i, a in enumerate(mutation.args)
            ]
            if mutation.args and mutation.args[0] is owner:
                args = args[1:]  # the receiver came first (a bound method call)
            args += [f"{k}={self.value(v)}" for k, v in mutation.kwargs.items()]
            args = [self.settled(a) if "=" not in a else a for a in args]
            self.effects.append(f"{target}.{mutation.name}({', '.join(args)})")


def generate_mock(
    tape: GraphTape,
    sources: dict[int, Source],
    input_sources: list[Source],
    mutations: list[Mutation],
    result: Any,
    ns: Namespace,
    symbols: Symbols | None = None,
) -> MockCode:
    input_index = {source: i for i, source in enumerate(input_sources)}
    symbols = symbols or Symbols()
    writer = MockWriter(tape, sources, ns, input_index, symbols)
    # 1. The tail: effects on external objects and the return value.  Rebuilding
    #    them marks which graph values must be outputs.
    tail = MockWriter(tape, sources, ns, input_index, symbols)
    tail.callout_results = writer.callout_results
    for callout in tape.callouts:
        if not _shared(callout.result):
            writer.callout_results[id(callout.result)] = f"c{callout.index}"
    for mutation in mutations:
        tail.mutation(mutation)
    if symbols.result is not None and symbols.result[0] is result:
        returned = tail.settled(symbols.result[1].expr())
    else:
        returned = tail.settled(tail.value(result))
    tape.finish()

    # 2. The body: segments and callouts in program order (a data check hoisted in
    #    front of its segment comes after the segment before it).
    callouts = _Body(writer, tape)
    if _draws_before_midguard(tape, callouts.last_midguard):
        # A replay that misses after a graph drew random numbers hands back the
        # generator as it found it: the monitoring run that follows draws them again.
        writer.lines.append("rng = rng_state()  # restored if a mid-guard misses")
        callouts.miss = "return restore_rng(rng)"
    callouts.callouts_after(-1)
    for segment in tape.segments:
        if segment.op_count or segment.outputs:
            args = ", ".join(writer.origin_expr(origin) for _, origin in segment.placeholders)
            writer.lines.append(
                f"g{segment.index} = graph{segment.index}({args})  # {segment.op_count} ops"
            )
            for origin, index in segment.writebacks:  # in-place updates of inputs
                writer.lines.append(
                    f"write_back({writer.origin_expr(origin)}, g{segment.index}[{index}])"
                )
            if segment.mutates_external and segment.index <= _segment_of(
                tape, callouts.last_midguard
            ):
                callouts.effect_before_midguard = True
            if segment.mutates_external and segment.index <= _segment_of(
                tape, callouts.last_callout
            ):
                callouts.effect_before_last_callout = True
        callouts.callouts_after(segment.index)
    effect_before_midguard = callouts.effect_before_midguard
    effect_before_last_callout = callouts.effect_before_last_callout
    effect_callout_before_midguard = callouts.effect_callout_before_midguard
    reusable, reason = True, None
    if effect_before_midguard:
        reusable = False
        reason = (
            "an external tensor is updated in place before a value the rest of the "
            "run depends on; a replay that misses there would update it twice"
        )
    body = writer.lines + tail.lines + tail.effects + [f"return {returned}"]
    source = (
        f"def mock(I, {GUARD_PARAMS}, R=(), made=None):\n"
        f'    """Generated by fullgraph: replay the record (graphs, callouts, effects, result).\n\n'
        f"    R: results of callouts a replay that missed has already made, by index;\n"
        f"    made: filled with the results of the callouts this replay makes.\n"
        f'    """\n'
        f"    made = {{}} if made is None else made\n" + "".join(f"    {line}\n" for line in body)
    )
    return MockCode(
        source,
        ns.values,
        reusable,
        reason,
        rerun_safe=not effect_before_last_callout,
        resume_on_miss=effect_callout_before_midguard,
    )


class _Body:
    """Writes the callouts of the mock's body, with their mid-guards, in program order."""

    def __init__(self, writer: MockWriter, tape: GraphTape):
        self.writer = writer
        self.tape = tape
        self.last_midguard = max((c.index for c in tape.callouts if _needs_midguard(c)), default=-1)
        self.last_callout = len(tape.callouts) - 1
        self.held_back: list[str] = []
        self.effect_before_midguard = False
        self.effect_before_last_callout = False
        self.effect_callout_before_midguard = False
        self.miss = "return MISS"
        # The last mid-guard is written (a data check runs in front of its graph, so an
        # effect with a smaller index can come after it).
        self.midguards_done = self.last_midguard < 0

    def callouts_after(self, segment_index: int) -> None:
        for callout in self.tape.callouts:
            if callout.segment_before == segment_index:
                self.callout(callout)

    def callout(self, callout) -> None:
        writer, tape = self.writer, self.tape
        fn = writer.ns.name_for(callout.function)
        values = list(callout.args) + list(callout.kwargs.values())
        overrides = {
            key: writer.origin_expr(origin) for key, origin in callout.tensor_origins.items()
        }
        if callout.check is not None:
            check = callout.check
            inputs = ", ".join(writer.origin_expr(origin) for _, origin in check.placeholders)
            writer.lines.append(
                f"h{callout.index} = check{callout.index}({inputs})  "
                f"# {check.op_count} ops, the data the next read takes"
            )
            overrides.update({key: f"h{callout.index}[{i}]" for key, i in check.positions.items()})
        writer.tensor_overrides = overrides  # nested ones too (print([x, y]))
        rendered = [
            callout.arg_syms[i].expr() if i in callout.arg_syms else writer.value(v)
            for i, v in enumerate(values)
        ]
        writer.tensor_overrides = {}
        call_args = rendered[: len(callout.args)]
        call_args += [f"{k}={r}" for k, r in zip(callout.kwargs, rendered[len(callout.args) :])]
        where = callout.location
        comment = f"# {callout.category.code} {callout.function_name}"
        if where is not None:
            comment += f" at {where.file.rsplit('/', 1)[-1]}:{where.line}"
        if callout.hoisted:
            comment += " (a data check in front of the graph)"
        call = f"{fn}({', '.join(call_args)})"
        # Output-only effects (print, logging) may wait for the mid-guards; an effect
        # later code depends on (backward() before reading .grad) may not.
        deferrable = (
            callout.effectful
            and callout.result is None
            and callout.category is breaks.PYTHON_SIDE_EFFECT
        )
        if deferrable and callout.index < self.last_midguard and not self.midguards_done:
            self.held_back.append(f"{call}  {comment} (held back until the mid-guards pass)")
            return
        if callout.effectful and callout.index <= self.last_midguard and not self.midguards_done:
            # A miss at a later mid-guard must not repeat this effect: the
            # monitoring run that follows is handed its result (see Missed).
            self.effect_callout_before_midguard = True
        if (
            callout.index <= self.last_midguard
        ):  # a missed replay of another record may have made it
            call = f"R[{callout.index}] if {callout.index} in R else {call}"
        writer.lines.append(f"c{callout.index} = made[{callout.index}] = {call}  {comment}")
        if callout.guard_result:
            writer.lines.append(f"if not ({_midguard(callout, writer.ns, tape)}):  # mid-guard")
            writer.lines.append(f"    {self.miss}")
        for condition in callout.conditions:
            writer.lines.append(f"if not ({condition.source(literal)}):  # mid-guard (symbolic)")
            writer.lines.append(f"    {self.miss}")
        if callout.index == self.last_midguard:
            writer.lines.extend(self.held_back)
            self.held_back = []
            self.midguards_done = True


def _draws_before_midguard(tape: GraphTape, last_midguard: int) -> bool:
    last = _segment_of(tape, last_midguard)
    return any(
        draws_random(node) for segment in tape.segments[: last + 1] for node in segment.graph.nodes
    )


def rng_state() -> tuple:
    """torch's generator states (CPU, and each CUDA device once CUDA is in use)."""
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    return torch.get_rng_state(), cuda


def restore_rng(state: tuple) -> Missed:
    cpu, cuda = state
    torch.set_rng_state(cpu)
    if cuda is not None:
        torch.cuda.set_rng_state_all(cuda)
    return MISS


def _is_numpy_scalar(value: Any) -> bool:
    kind = type(value)
    return (
        kind.__module__ == "numpy"
        and kind.__name__ != "ndarray"
        and getattr(value, "shape", None) == ()
    )


def _is_literal_text(expr: str) -> bool:
    try:
        ast.literal_eval(expr)
        return True
    except (ValueError, SyntaxError):
        return False


def _shared(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, str)) and not isinstance(value, float)


def _needs_midguard(callout) -> bool:
    return callout.guard_result or bool(callout.conditions)


def _midguard(callout, ns: Namespace, tape: GraphTape) -> str:
    name = f"c{callout.index}"
    value = callout.result
    if isinstance(value, torch.Tensor):
        # In a size-generic record the sizes of a callout's tensor are symbols too.
        dims = tape.varying_dims(value) if tape.generic_sizes else frozenset()
        return tensor_check(name, value, ns, dims)
    if value is None or isinstance(value, bool):
        return f"{name} is {value!r}"
    if is_literal(value):
        return f"type({name}) is {type(value).__name__} and {name} == {literal(value)}"
    if isinstance(value, IDENTITY_CHECKED):  # a function looked up in a registry
        return f"{name} is {ns.bind(value, _constant_hint(value))}"
    if type(value) in (tuple, list) and all(
        item is None or isinstance(item, torch.Tensor) for item in value
    ):  # torch.autograd.grad's tuple of gradients
        checks = [f"type({name}) is {type(value).__name__}", f"len({name}) == {len(value)}"]
        for position, item in enumerate(value):
            if item is None:
                checks.append(f"{name}[{position}] is None")
            else:
                dims = tape.varying_dims(item) if tape.generic_sizes else frozenset()
                checks.append(tensor_check(f"{name}[{position}]", item, ns, dims))
        return " and ".join(checks)
    raise Unsupported(
        breaks.UNSUPPORTED_CONSTRUCT,
        f"{callout.function_name} returned a {type(value).__name__} the rest of the run reads",
    )


def _constant_hint(value: Any) -> str:
    return getattr(value, "__name__", None) or type(value).__name__.lower()


def _segment_of(tape: GraphTape, callout_index: int) -> int:
    if callout_index < 0:
        return -1
    return tape.callouts[callout_index].segment_before
