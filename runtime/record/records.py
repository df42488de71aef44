"""Records: a captured operator graph (in segments), its guard and its mock.

``build_record`` turns a finished :class:`MonitorRun` into a :class:`Record`:
it decides the graph inputs, generates the guard and mock sources, and
compiles the segment graphs with the chosen backend.
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import sys
import types
from collections.abc import Callable
from functools import partial
from typing import Any

import torch
import torch.fx

from fullgraph.runtime import breaks
from fullgraph.runtime.backends import Backend, eager_backend, sized_by_data_variant
from fullgraph.runtime.capture import data_dependent
from fullgraph.runtime.capture.data_checks import check_module, draws_random
from fullgraph.runtime.capture.origins import ExternalOrigin
from fullgraph.runtime.capture.segments import Unsupported
from fullgraph.runtime.capture.tensor_meta import TensorMeta
from fullgraph.runtime.monitor.run import MonitorRun
from fullgraph.runtime.monitor.symbolic_calls import REPLAYABLE_LIBRARIES
from fullgraph.runtime.record import changed_arrays, updated_views
from fullgraph.runtime.record.codegen import Namespace, compile_source
from fullgraph.runtime.record.guard_helpers import storages_apart
from fullgraph.runtime.record.guards import GuardCode, GuardRenderer, generate_guard
from fullgraph.runtime.record.mock import generate_mock
from fullgraph.runtime.record.mock_support import MISS
from fullgraph.runtime.record.mock_values import Symbols
from fullgraph.runtime.record.native_guards import build_guard
from fullgraph.runtime.record.type_check_guards import type_check_guards
from fullgraph.runtime.sources import (
    ArgSource,
    AttrSource,
    HooksSource,
    KwargSource,
    LookupSource,
    Source,
    TypeOfSource,
    base_of,
)
from fullgraph.runtime.torch_internals import tree_flatten

_record_ids = itertools.count()


@dataclasses.dataclass
class Record:
    guard_source: str
    mock_source: str
    graphs: list[torch.fx.GraphModule]
    guard: Callable[..., Any]
    mock: Callable[..., Any]
    check_count: int
    reusable: bool
    not_reusable_reason: str | None
    breaks: list[breaks.GraphBreak]
    side_effects: list[str]
    guard_namespace: dict[str, Any] = dataclasses.field(default_factory=dict)
    mock_namespace: dict[str, Any] = dataclasses.field(default_factory=dict)
    provenance: dict[str, str] = dataclasses.field(default_factory=dict)
    scalar_reads: list = dataclasses.field(default_factory=list)  # (Source, value) guarded by value
    tensor_shapes: list = dataclasses.field(default_factory=list)  # (Source, shape) of tensors read
    dynamic_shapes: bool = False  # compiled for sizes that vary
    tensor_callouts: bool = False  # a callout returns tensors (their sizes may vary)
    rerun_safe: bool = True  # a callout raising in the mock can be re-run eagerly
    resume_on_miss: bool = False  # on a mid-guard miss, monitor next with the callouts' results
    callout_names: list = dataclasses.field(default_factory=list)
    # Value reads run in front of their graph (data_checks): no split, a mid-guard each.
    data_checks: list[breaks.GraphBreak] = dataclasses.field(default_factory=list)
    # Output effects of plain values made after the graph (no split either).
    deferred_effects: list[breaks.GraphBreak] = dataclasses.field(default_factory=list)
    check_graphs: dict[str, torch.fx.GraphModule] = dataclasses.field(default_factory=dict)
    draws_random: bool = False  # a graph draws from torch's generator (restored on a rerun)
    hits: int = 0
    # Set when the eager trial found this record slower than the plain function: the
    # calls its guard accepts run eagerly (other records of the function still replay).
    slower_than_eager: str | None = None
    native_checks: int = 0  # checks the native guard tree runs (the rest run in Python)
    guard_code: GuardCode | None = None  # the checks the guard renders (explanations reuse them)

    @property
    def graph_code(self) -> str:
        parts = [f"# {name}\n{gm.code.strip()}" for name, gm in self.check_graphs.items()]
        parts += [f"# graph{i}\n{gm.code.strip()}" for i, gm in enumerate(self.graphs)]
        return "\n\n".join(parts)

    def replay(
        self,
        args: tuple,
        kwargs: dict,
        module,
        fn,
        premade: dict | None = None,
        made: dict | None = None,
    ) -> Any:
        """Guard then mock; ``premade``: callout results to reuse, ``made``: filled with new ones."""
        inputs = self.guard(args, kwargs, module, fn)
        if inputs is None:
            return MISS
        return self.mock(inputs, args, kwargs, module, fn, premade or (), made)

    def failed_check(self, args: tuple, kwargs: dict, module, fn) -> str | None:
        """The first guard check this call fails, as its reason (for reports and debugging)."""
        if self.guard_code is None:
            return None
        ns = Namespace()
        ns.values.update(self.guard_namespace)
        source = GuardRenderer(ns, self.guard_code.values).function(
            "guard_why", self.guard_code.checks, self.guard_code.inputs, explain=True
        )
        guard_why = compile_source(source, ns.values, "guard_why", "<fullgraph guard why>")
        outcome = guard_why(args, kwargs, module, fn)
        if outcome is None:
            return "a path the guard reads no longer exists"
        return outcome if isinstance(outcome, str) else None

    def shares_callouts(self, other: Record, count: int) -> bool:
        """Whether the first ``count`` callouts are the same calls (so their results carry over)."""
        return self.callout_names[:count] == other.callout_names[:count]


class RecordError(Exception):
    """The run cannot become a record; carries the break that explains why."""

    def __init__(self, graph_break: breaks.GraphBreak | None, detail: str, transient: bool = False):
        super().__init__(detail)
        self.graph_break = graph_break
        self.detail = detail
        # Only this call's state can't be recorded (e.g. aliased inputs): the next call
        # is monitored again instead of the function falling back for good.
        self.transient = transient


def graph_modules(run: MonitorRun) -> list[torch.fx.GraphModule]:
    modules = []
    for segment in run.tape.segments:
        root = torch.nn.Module()
        for name, submodule in segment.submodules.items():
            root.add_module(name, submodule)
        gm = torch.fx.GraphModule(root, segment.graph, class_name=f"Graph{segment.index}")
        modules.append(gm)
    return modules


def _compile(run: MonitorRun, segment, gm, examples: list, backend: Backend):
    if any(_subclass(example) for example in examples):
        # A tensor subclass (its __torch_function__, its attributes): a compiled graph
        # would compute on plain tensors and return them; its ops run as recorded.
        return eager_backend(gm, examples)
    if not segment.sized_by_data:
        return backend(gm, examples)
    try:
        return sized_by_data_variant(backend)(gm, examples)
    except Exception as error:  # noqa: BLE001 - torch can't keep such a size symbolic here
        why = f"the graph with a data-dependent size failed to compile ({type(error).__name__})"
        data_dependent.keep_as_callouts(run, why)
        raise RecordError(None, run.not_recordable[-1], transient=True) from None


def _backward_through_graphs(callouts: list) -> int:
    """The last graph a backward inside the function may run through in a way one
    compiled autograd node per graph can't (-1: none): a compiled graph's outputs
    share one node, so a second ``backward()`` (a GAN step, actor and critic) runs
    through it again after the first freed it, and ``autograd.grad`` or
    ``backward(inputs=...)`` of a tensor the graph computed finds no path through it.
    Those graphs run their ops as recorded (per-op autograd), the others compiled."""
    passes = [c for c in callouts if c.function in _BACKWARD_CALLS]
    if len(passes) < 2 and not any(
        c.function is torch.autograd.grad or c.kwargs.get("inputs") is not None for c in passes
    ):
        return -1
    return max(c.segment_before for c in passes)


_BACKWARD_CALLS = (torch.autograd.backward, torch.autograd.grad, torch.Tensor.backward)


def build_record(
    run: MonitorRun,
    result: Any,
    backend: Backend | None,
    arg_count: int,
    kwarg_names: tuple[str, ...],
    dynamic_backend: Backend | None = None,
) -> Record:
    """``dynamic_backend`` compiles the graphs when the record is size-generic (every size
    the program read was followed symbolically); the guard then lets vary only the
    dimensions the run followed (``ShapeTracker.followed_dims``)."""
    if run.tape.unsupported is not None:
        where = run.unsupported[0] if run.unsupported else None
        raise RecordError(where, run.tape.unsupported.detail)
    # A varying number the program used without the monitor following it (read by a
    # loop, a library call...) was baked in as it was: guard its value after all.
    run.symbolic_sources &= run.symbolic_taken
    crossing = data_dependent.crossing(run.tape)
    if crossing is not None:
        data_dependent.keep_as_callouts(run, crossing)
    if run.not_recordable:
        raise RecordError(
            None,
            run.not_recordable[0] + "; such calls are monitored each time",
            transient=True,
        )
    if getattr(run, "callout_failed", False):
        raise RecordError(None, "a dynamic call raised an exception that the program caught")
    if run.shapes is not None:
        run.shapes.install_assumptions()  # before size_generic() is asked: it may give up
    # Size-generic: input sizes that varied, or sizes of callout results, are symbols.
    generic = run.shapes is not None and run.size_generic() and bool(run.shapes.symbols)
    run.tape.generic_sizes = generic
    input_sources = _external_inputs(run)
    ns = Namespace()
    for name, value in run.globals_consts.values():
        ns.values[name] = value
    try:
        symbols = Symbols(run.container_syms, run.store_syms, run.result_sym)
        mock = generate_mock(
            run.tape, run.sources, input_sources, run.mutations, result, ns, symbols
        )
    except Unsupported as error:
        raise RecordError(None, error.detail) from None
    for library in REPLAYABLE_LIBRARIES:  # ``numpy.std(c0)``: symbolic library calls
        if f"{library}." in mock.source and library in sys.modules:
            ns.values.setdefault(library, sys.modules[library])
    values = _values_by_source(run)
    updated_inputs = _updated_inputs(run, input_sources, values)
    try:
        updated_views.check(run, result, updated_inputs, values)
    except updated_views.HandsOutAView as error:
        raise RecordError(None, f"{error}; such calls run eagerly") from None
    changed = changed_arrays.unseen_change(run, values)
    if changed is not None:
        raise RecordError(
            None,
            f"the numpy array {changed} from outside is changed in place by numpy code "
            "(a replay would not change it); such calls are monitored each time",
            transient=True,
        )
    tensor_meta = _tensor_meta_of_reads(run)
    # Before the guard is written: it may add identity reads (``run.reads``) of its own.
    distinct = run.distinct + _mutated_apart(run)
    # Inputs may have grown while the tail was rebuilt (it can reference new external tensors).
    guard = generate_guard(
        run.reads,
        run.aliases,
        input_sources,
        {name: value for name, value in run.globals_consts.values()},
        run.tape.entry_grad_mode,
        torch.get_default_dtype(),
        arg_count,
        kwarg_names,
        run.symbolic_sources,
        run.entry_conditions,
        updated_inputs,
        dynamic=run.shapes.followed_dims() if generic else None,
        values=values,
        entry_state=run.tape.entry_state,
        kwargs_ordered=bool(
            run.root_code is not None and run.root_code.co_flags & inspect.CO_VARKEYWORDS
        ),
        distinct=distinct,
        tensor_meta=tensor_meta,
        entry_devices=run.tape.entry_devices or (),
        more_checks=partial(type_check_guards, list(run.type_checks.values())),
    )
    for library in REPLAYABLE_LIBRARIES:  # a condition on ``math.cos(it)``, by name
        if f"{library}." in guard.source and library in sys.modules:
            guard.namespace.setdefault(library, sys.modules[library])
    if generic and dynamic_backend is not None:
        backend = dynamic_backend
    graphs = graph_modules(run)
    record_id = next(_record_ids)
    namespace = dict(ns.values)
    compiled_graphs = {}
    # Each graph starts (and ends) in the grad mode the call started with, which a replay
    # runs it in: it is compiled so (AOTAutograd traces a backward only with grad on), and
    # the grad mode the function returned with is the caller's again afterwards.
    per_op = _backward_through_graphs(run.tape.callouts)
    with torch.set_grad_enabled(run.tape.entry_grad_mode):
        for gm, segment in zip(graphs, run.tape.segments):
            if segment.op_count or segment.outputs:
                examples = [node.meta.get("example_value") for node, _ in segment.placeholders]
                compiled_graphs[f"graph{segment.index}"] = (
                    _compile(
                        run,
                        segment,
                        gm,
                        examples,
                        eager_backend if segment.index <= per_op else backend,
                    )
                    if backend
                    else gm.forward
                )
    namespace.update(compiled_graphs)
    for gm in graphs:  # compiled: the first call's tensors need not live as long as it
        for node in gm.graph.nodes:
            node.meta.pop("example_value", None)
    splits, checks, deferred = run.tape.call_sites()
    check_graphs = {
        f"check{c.index}": check_module(c.check, c.index)
        for c in run.tape.callouts
        if c.check is not None
    }
    namespace.update({name: gm.forward for name, gm in check_graphs.items()})  # eager: tiny
    guard_fn = build_guard(guard, str(record_id))
    # Later renderings (explanations) ask the values only which paths are a module's
    # slots: the record keeps no other object of the first call alive (its arguments).
    guard.values = {s: v for s, v in guard.values.items() if isinstance(v, torch.nn.Module)}
    for meta in tensor_meta.values():
        if isinstance(meta, TensorMeta):
            meta.forget_example()
    mock_fn = compile_source(mock.source, namespace, "mock", f"<fullgraph mock {record_id}>")
    return Record(
        guard_source=guard.source,
        mock_source=mock.source,
        graphs=graphs,
        guard=guard_fn,
        mock=mock_fn,
        check_count=guard.check_count,
        native_checks=getattr(guard_fn, "native_checks", 0),
        reusable=mock.reusable,
        not_reusable_reason=mock.not_reusable_reason,
        breaks=splits,
        data_checks=checks,
        deferred_effects=deferred,
        check_graphs=check_graphs,
        draws_random=any(draws_random(n) for gm in graphs for n in gm.graph.nodes),
        side_effects=[m.describe() for m in run.mutations],
        guard_namespace=guard.namespace,
        guard_code=guard,
        mock_namespace=dict(ns.values),
        provenance={**ns.provenance, **guard.provenance},
        rerun_safe=mock.rerun_safe,
        resume_on_miss=mock.resume_on_miss,
        callout_names=[
            (c.function_name, c.location.line if c.location else 0) for c in run.tape.callouts
        ],
        dynamic_shapes=generic,
        tensor_callouts=any(_holds_tensor(c.result) for c in run.tape.callouts),
        tensor_shapes=[(s, meta.shape) for s, meta in tensor_meta.items()],
        scalar_reads=[
            (s, v)
            for s, v in run.reads.items()
            if type(v) in (int, float) and s not in run.symbolic_sources
        ],
    )


# Slots of a module's own bookkeeping: never an object the program passes around.
_MODULE_SLOTS = frozenset(["_modules", "_parameters", "_buffers", "__dict__"])


def _mutated_apart(run: MonitorRun) -> list[tuple[Source, Source]]:
    """Pairs of paths that must reach two objects: each outside object the call changed
    (not a tensor: those are kept apart by storage) and every other object of its
    exact type the run read the changed part of.  Were they one object
    (``f(xs, ys)`` called as ``f(l, l)``, an argument that is also the global the
    function reads), the change through one path would show through the other,
    which a record made for two objects does not replay."""
    changed: dict[int, tuple] = {}  # id(owner) -> (path, owner, attribute names or None)
    for mutation in run.mutations:
        owner = mutation.owner
        if mutation.kind in ("setglobal", "setcell") or isinstance(owner, torch.Tensor):
            continue  # a module's globals, a closure cell; tensors: storages_apart
        if mutation.target is None:
            continue
        names = {mutation.name} if mutation.kind in ("setattr", "delattr") else None
        _, _, known = changed.get(id(owner), (None, None, set()))
        merged = None if names is None or known is None else known | names
        changed[id(owner)] = (mutation.target, owner, merged)
    if not changed:
        return []
    read_below = _reads_below(run)
    pairs = []
    for target, owner, names in changed.values():
        for source, value in run.source_values.items():
            steps = read_below.get(source)
            if (
                steps is None
                or type(value) is not type(owner)
                or value is owner
                or getattr(source, "name", None) in _MODULE_SLOTS
                or isinstance(value, (type, types.ModuleType, types.FunctionType))
            ):
                continue
            if names is not None and "" not in steps and not (steps & names):
                continue  # it read other attributes than those the call changed
            if _identity_checkable(target, owner) and _identity_checkable(source, value):
                # Checked to be these very objects (one native check each, not a check
                # per pair: twelve layers keeping their caches).
                for path, obj in ((target, owner), (source, value)):
                    if path not in run.reads:
                        run.read(path, obj, symbolic=False)
                continue
            pairs.append((target, source))
    return pairs


def _reads_below(run: MonitorRun) -> dict[Source, set[str]]:
    """Source -> what is read right below it, for every path some read goes through: the
    attribute names (a method lookup's too), "" for the object itself or an item,
    length or key of it; its class and hooks add nothing (no attribute store shows)."""
    below: dict[Source, set[str]] = {}
    for read in run.reads:
        below.setdefault(read, set()).add("")
        child, base = read, base_of(read)
        while base is not None:
            steps = below.setdefault(base, set())
            if isinstance(child, (AttrSource, LookupSource)):
                steps.add(child.name)
            elif not isinstance(child, (TypeOfSource, HooksSource)):
                steps.add("")
            child, base = base, base_of(base)
    return below


def _identity_checkable(source: Source, value: Any) -> bool:
    """Whether a read of ``source`` is checked as ``... is obj`` (two such paths to two
    objects cannot reach one); arguments and containers are checked by type only."""
    return not isinstance(source, (ArgSource, KwargSource)) and not isinstance(
        value, (list, dict, tuple, set)
    )


def _tensor_meta_of_reads(run: MonitorRun) -> dict[Source, Any]:
    """Source -> the metadata each tensor read had when the run first met it (the call
    may have changed it since: ``x.squeeze_()``), and the contents of each numpy array
    (``torch.from_numpy(a).add_(x)`` writes them)."""
    metas = {}
    for source, value in run.reads.items():
        if id(value) in run.entry_arrays:
            metas[source] = run.entry_arrays[id(value)]
        elif isinstance(value, torch.Tensor):
            meta = run.entry_meta.get(id(value)) or TensorMeta.taken(value)
            if meta is not None:  # else the guard reads the tensor as it is
                metas[source] = meta
    return metas


def _values_by_source(run: MonitorRun) -> dict:
    """Source -> object, for every object the run tracked (the guard picks faster paths)."""
    values = dict(run.reads)
    for obj in run.keepalive:
        source = run.sources.get(id(obj))
        if source is not None:
            values.setdefault(source, obj)
    return values


def _updated_inputs(run: MonitorRun, input_sources: list[Source], values: dict) -> list[Source]:
    """Inputs the graphs update in place: they must share memory with no other input,
    in the run (else its graph is not the program's answer) and in every replay."""
    updated = [
        origin.source
        for segment in run.tape.segments
        for origin, _ in segment.writebacks
        if isinstance(origin, ExternalOrigin)
    ]
    if not updated:
        return []
    tensors = tuple(values.get(source) for source in input_sources)
    positions = tuple(i for i, source in enumerate(input_sources) if source in updated)
    if all(isinstance(t, torch.Tensor) for t in tensors) and not storages_apart(tensors, positions):
        raise RecordError(
            None,
            "an input updated in place shares memory with another input (the same tensor "
            "or a view of it); such calls are monitored each time",
            transient=True,
        )
    return updated


def _external_inputs(run: MonitorRun) -> list[Source]:
    sources: list[Source] = []
    for segment in run.tape.segments:
        for _, origin in segment.placeholders:
            if isinstance(origin, ExternalOrigin) and origin.source not in sources:
                sources.append(origin.source)
    return sources


def _subclass(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and type(value) not in (
        torch.Tensor,
        torch.nn.Parameter,
        torch.nn.Buffer,
    )


def _holds_tensor(value: Any) -> bool:
    return any(isinstance(leaf, torch.Tensor) for leaf in tree_flatten(value)[0])
