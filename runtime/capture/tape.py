"""The graph tape: torch operations captured into torch.fx graphs, split into segments.

The monitor hands the tape every torch-level call the monitored program makes
(``capture/mode.py`` routes them).  Tensor computations become nodes of the
current segment's graph (``capture/nodes.py`` writes each node); a call that
must run eagerly (a ValueRead such as ``.item()`` or a data-dependent shape such
as ``nonzero``) ends the segment and is recorded as a *callout*, after which a
new segment starts.

Tensors are tracked by identity while the run holds them (``producer``): each
is the output of a graph node, an external tensor with a source, or a value
returned by a callout (``capture/origins.py``).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import torch
import torch.fx

from fullgraph.runtime import breaks
from fullgraph.runtime.capture import data_dependent, history, segment_modes
from fullgraph.runtime.capture.data_checks import DataCheck, drop_unused, plan_check, storage_key
from fullgraph.runtime.capture.nodes import (
    emit_call,
    indexed_by_lifted_int,
    is_lifted_int,
    target_name,
)
from fullgraph.runtime.capture.origins import (
    CalloutOrigin,
    ExternalOrigin,
    LiftedOrigin,
    NodeOrigin,
    Origin,
)
from fullgraph.runtime.capture.segments import Callout, Segment, Unsupported, modes_now
from fullgraph.runtime.capture.tensor_meta import TensorMeta
from fullgraph.runtime.capture.values import (
    holds_tensor,
    is_plain,
    legacy_type,
    lifted_tensor,
    plain_number,
    views_tensor_memory,
)
from fullgraph.runtime.sources import Source
from fullgraph.runtime.symbolic.shapes import ShapeTracker
from fullgraph.runtime.symbolic.sizes import (
    CalloutResultSource,
    SizeInt,
    evaluate_size,
    holds_size,
    map_sizes,
)
from fullgraph.runtime.torch_internals import (
    INFERENCE_MODE,
    autocast_state,
    default_devices,
    global_state,
    is_symbolic,
    tree_flatten,
    tree_unflatten,
)


class GraphTape:
    """Builds the segment graphs and callout list of one monitoring run."""

    def __init__(
        self,
        resolve_external: Callable[[torch.Tensor], Source | None],
        locate: Callable,
        lift: Callable[[Any], Any] = lambda value: None,
    ):
        self.resolve_external = resolve_external  # tensor -> source (or None)
        self.lift = lift  # non-tensor argument -> Sym when it is a symbolic scalar to lift
        self.locate = locate  # () -> breaks.GraphBreak location of the current user call
        self.segments: list[Segment] = [Segment(0)]
        self.callouts: list[Callout] = []
        self.producer = history.Producers(self.callouts)  # tensor id -> Origin
        self.keepalive: list[Any] = []
        self.entry_grad_mode = torch.is_grad_enabled()
        self.entry_state = {**global_state(), **segment_modes.anomaly_state()}
        self.entry_autocast = autocast_state()
        # The caller's torch.device(...) blocks (None: under another torch mode).
        self.entry_devices = default_devices()
        # The state the run returned with (set by finish): the mock leaves it so.
        self.exit_grad_mode = self.entry_grad_mode
        self.exit_anomaly = segment_modes.anomaly_state()
        self.unsupported: Unsupported | None = None
        self.shaped_by_data: set[int] = set()  # ids of tensors whose sizes depend on data
        self.shapes: ShapeTracker | None = None  # set when input sizes vary (symbolic sizes)
        self.generic_sizes = False  # the record is compiled for any size (set at build time)

    # -- tensor provenance -------------------------------------------------
    @property
    def current(self) -> Segment:
        return self.segments[-1]

    def origin_of(self, tensor: torch.Tensor) -> Origin:
        origin = self.producer.get(id(tensor))
        if origin is None:
            source = self.resolve_external(tensor)
            if source is None:
                raise Unsupported(
                    breaks.UNSUPPORTED_CONSTRUCT,
                    "a tensor whose origin the monitor could not trace "
                    f"(shape {tuple(tensor.shape)}) was used",
                )
            origin = ExternalOrigin(source)
            self.producer[id(tensor)] = origin
            self.keepalive.append(tensor)
        return origin

    def computed(self, tensor: torch.Tensor) -> bool:
        """Whether this tape's graphs computed ``tensor`` (rather than took it in)."""
        return isinstance(self.producer.get(id(tensor)), NodeOrigin)

    def computed_in_current_segment(self, tensor: torch.Tensor) -> bool:
        """Whether the graph being built computed ``tensor`` (it is not one of its inputs)."""
        origin = self.producer.get(id(tensor))
        return isinstance(origin, NodeOrigin) and origin.segment == self.current.index

    def node_for(self, tensor: torch.Tensor) -> torch.fx.Node:
        segment = self.current
        node = segment.env.get(id(tensor))
        if node is not None:
            return history.check(tensor, node)
        origin = self.origin_of(tensor)
        if isinstance(origin, NodeOrigin):
            if history.check(tensor, origin.node) and origin.segment == segment.index:
                return origin.node
            self.segments[origin.segment].output_index(origin.node)
        name = f"in{len(segment.placeholders)}"
        if isinstance(origin, ExternalOrigin):
            name = origin.source.local_name().lower()
        taken = {n.target for n, _ in segment.placeholders}
        candidate, suffix = name, 1
        while candidate in taken:
            suffix += 1
            candidate = f"{name}_{suffix}"
        node = segment.graph.placeholder(candidate)
        node.meta["example_value"] = tensor
        history.carry(node, origin)
        segment.placeholders.append((node, origin))
        segment.env[id(tensor)] = node
        return node

    def fake_of(self, tensor: torch.Tensor) -> torch.Tensor:
        """The tensor's fake twin with symbolic sizes (only while sizes are followed)."""
        fake = self.shapes.fakes.get(id(tensor))
        if fake is None:
            origin = self.origin_of(tensor)
            source = None
            if isinstance(origin, ExternalOrigin):
                source = origin.source
            elif isinstance(origin, CalloutOrigin):
                source = CalloutResultSource(origin.index, origin.path)
            fake = self.shapes.fake_of(tensor, source)
        return fake

    def varying_dims(self, tensor: torch.Tensor) -> frozenset:
        """The dimensions of ``tensor`` the size-generic graphs treat as symbols."""
        fake = self.shapes.fakes.get(id(tensor)) if self.shapes is not None else None
        if fake is None:
            return frozenset()
        return frozenset(d for d, size in enumerate(fake.shape) if is_symbolic(size))

    def _size_node(self, size: SizeInt) -> torch.fx.Node:
        """Graph nodes computing a size from the inputs' sizes (``x.size(1) * 4``)."""
        segment = self.current
        text = size.expr.text()
        node = segment.size_nodes.get(text)
        if node is None:
            node = evaluate_size(
                size.expr,
                lambda leaf: segment.graph.call_method(
                    "size", (self.node_for(leaf.tensor), leaf.dim)
                ),
                lambda fn, a, b: segment.graph.call_function(fn, (a, b)),
            )
            segment.size_nodes[text] = node
        return node

    def _scalar(self, value: Any) -> Any:
        """A constant, or a placeholder for a symbolic scalar lifted into the graph."""
        if self.shapes is not None and holds_size(value):  # sizes exist only while followed
            return map_sizes(value, self._size_node)
        sym = self.lift(value)
        if sym is None:
            return value
        return self.lifted_number(sym, value)

    def lifted_number(self, sym: Any, value: Any) -> torch.fx.Node:
        """A lifted scalar as an op's operand: the Python number again, read from its 0-d
        tensor input (``scalar1.item()``).  torch treats a Python number differently from
        a 0-d tensor: it takes part in type promotion only by kind (``int_tensor * 2.5``
        is float32, ``half_tensor * 1.1`` float16, where a float64 0-d tensor would make
        float64), is computed with as a double (not rounded to the tensor's dtype first),
        and selects the Scalar overloads (``x ** 2`` squares, ``2 ** x`` is
        ``pow(Scalar, Tensor)``): the op in the graph is then the op the program ran."""
        node = self.lifted_placeholder(sym, value)
        number = self.current.graph.call_method("item", (node,))
        number.meta["example_value"] = value
        return number

    def lifted_placeholder(self, sym: Any, value: Any) -> torch.fx.Node:
        """A graph input for symbolic scalar ``sym`` (whose value now is ``value``)."""
        segment = self.current
        node = segment.graph.placeholder(f"scalar{len(segment.placeholders)}")
        node.meta["example_value"] = lifted_tensor(value)
        segment.placeholders.append((node, LiftedOrigin(sym)))
        return node

    def bind(self, tensor: torch.Tensor, node: torch.fx.Node) -> None:
        segment = self.current
        segment.env[id(tensor)] = node
        node.meta["example_value"] = tensor
        history.note(tensor, node)
        # Updated in place, an outside tensor or callout result stays that object (F172).
        if not isinstance(self.producer.get(id(tensor)), (ExternalOrigin, CalloutOrigin)):
            self.producer[id(tensor)] = NodeOrigin(segment.index, node)
        self.keepalive.append(tensor)

    # -- recording ---------------------------------------------------------
    def record_op(self, func, args: tuple, kwargs: dict, result: Any, mutated: list = ()) -> None:
        """Record one torch call; ``mutated``: tensor arguments whose version counter moved."""
        segment = self.current
        inference = torch.is_inference_mode_enabled()
        if segment.inference_mode is None:
            segment.inference_mode = inference  # the mock runs the graph in this mode
        elif segment.inference_mode != inference:
            # One graph can't run partly inside a torch.inference_mode() block: its
            # tensors would all be inference tensors, or none.
            raise Unsupported(
                breaks.UNSUPPORTED_CONSTRUCT,
                "a torch.inference_mode() block that starts or ends inside a graph",
            )
        self.sync_grad_mode(segment)
        segment_modes.sync_autocast(segment, self.entry_autocast)
        if func is torch._C.TensorBase.new and len(args) == 2 and isinstance(args[1], torch.Size):
            # ``p.new(p.shape)``: a size (the pytree below makes it a tuple: data).
            func, args = torch._C.TensorBase.new_empty, (args[0], tuple(args[1]))
        flat, spec = tree_flatten((args, kwargs))
        mapped = [
            self.node_for(x)
            if isinstance(x, torch.Tensor)
            else plain_number(self._scalar(legacy_type(x)))  # lifted by identity first
            for x in flat
        ]
        node_args, node_kwargs = tree_unflatten(mapped, spec)
        self.note_updates(mutated)
        if func in _INDEXING and not node_kwargs and is_lifted_int(node_args[1]):
            value_dims = args[2].dim() if len(args) > 2 and isinstance(args[2], torch.Tensor) else 0
            node = indexed_by_lifted_int(segment.graph, func, node_args, args[0].dim(), value_dims)
        else:
            node = emit_call(segment.graph, func, node_args, node_kwargs)
        name = target_name(func)
        segment.op_count += 1
        segment.op_counts[name] = segment.op_counts.get(name, 0) + 1
        if self.shapes is not None:
            self.shapes.propagate(func, args, kwargs, result, self.fake_of)
        data_dependent.propagate(self, func, args, kwargs, flat, result)
        if isinstance(result, torch.Tensor):
            self.bind(result, node)
            return
        if result is None:  # an in-place op such as Tensor.__setitem__
            return
        self._bind_structure(segment.graph, node, result, name)

    def note_updates(self, tensors: list) -> None:
        """Tensors the op about to be recorded updates in place: graph inputs (directly
        or through a view) become mutated placeholders."""
        segment = self.current
        for candidate in (c for t in tensors for c in (t, t._base) if c is not None):
            node = segment.env.get(id(candidate))
            if node is not None and node.op == "placeholder":
                if node not in segment.mutated_placeholders:
                    segment.mutated_placeholders.append(node)
                origin = dict(segment.placeholders).get(node)
                # A callout's result may be outside state too (``p.grad``, a cache).
                if isinstance(origin, (ExternalOrigin, CalloutOrigin)):
                    segment.mutates_external = True
                    if candidate.requires_grad and not candidate.is_leaf:
                        segment.restorable = False
        for tensor in tensors:
            node = segment.env.get(id(tensor))
            if tensor._base is None and (node is None or node.op != "placeholder"):
                self._note_alias_update(segment, tensor)
        segment.updated_storages.update(storage_key(tensor) for tensor in tensors)

    def _note_alias_update(self, segment: Segment, tensor: torch.Tensor) -> None:
        """An update through ``x.data`` or ``x.detach()`` (no view of ``x``): the graph
        writes an outside tensor's memory itself, with no write-back the mock could
        take back on a miss.  Such a segment is not restorable."""
        key = storage_key(tensor)
        for node, origin in segment.placeholders:
            value = node.meta.get("example_value")
            if (
                isinstance(origin, (ExternalOrigin, CalloutOrigin))
                and isinstance(value, torch.Tensor)
                and key is not None
                and storage_key(value) == key
            ):
                segment.mutates_external = True
                segment.restorable = False

    def _bind_structure(
        self, graph: torch.fx.Graph, node: torch.fx.Node, value: Any, name: str
    ) -> None:
        """Bind each tensor inside a tuple/list/dict result to a getitem chain on ``node``."""
        if isinstance(value, (tuple, list)):
            items = enumerate(value)
        elif isinstance(value, dict):
            items = value.items()
        else:
            raise Unsupported(
                breaks.UNSUPPORTED_CONSTRUCT,
                f"{name} returned a {type(value).__name__} holding tensors",
            )
        for key, item in items:
            if isinstance(item, torch.Tensor):
                self.bind(item, graph.call_function(operator.getitem, (node, key)))
            elif holds_tensor(item):
                self._bind_structure(
                    graph, graph.call_function(operator.getitem, (node, key)), item, name
                )

    def sync_grad_mode(self, segment: Segment) -> None:
        segment_modes.sync_grad_mode(segment, self.entry_grad_mode)

    def record_callout(
        self,
        function,
        name: str,
        args: tuple,
        kwargs: dict,
        result: Any,
        category: breaks.BreakCategory,
        effectful: bool,
        guard_result: bool,
        reads_a_setting: bool = False,
    ) -> Callout:
        """End the current segment at an eager call; later tensors start a new one.
        ``reads_a_setting``: a read of a process setting no tensor operation changes,
        made in front of the current segment's graph instead (no split)."""
        if autocast_state() != self.entry_autocast:
            # The mock would make the call outside the autocast region it ran in.
            raise Unsupported(
                breaks.UNSUPPORTED_CONSTRUCT,
                "a call inside a torch.autocast region of the function cannot be replayed "
                "between graphs",
            )
        flat, _ = tree_flatten((args, kwargs))
        tensors = [value for value in flat if isinstance(value, torch.Tensor)]
        # Tensors a graph computed, held by an object the call made (the mock rebuilds
        # the object from its attributes, so they must be graph outputs).
        tensors += [t for t in _held_tensors(flat) if id(t) in self.producer]
        origins = {id(t): self.origin_of(t) for t in tensors}  # where each comes from now
        hoisted, check = False, None
        if category is breaks.TENSOR_VALUE_READ and not effectful:
            # ``h.numpy()`` shares h's memory: a check graph's copy of h would not be the
            # tensor the program goes on updating (``h.relu_()`` shows through the array).
            aliases = any(views_tensor_memory(v) for v in tree_flatten(result)[0])
            hoisted, check = self._hoist(tensors, origins, recompute=not aliases)
        elif reads_a_setting and not effectful and not tensors:
            hoisted = True
        # print("epoch", n), log.info("shape %s", x.shape), warnings.warn("..."): an output
        # effect of plain values needs no split; the mock makes it after the graph.
        deferred = (
            effectful
            and result is None
            and category is breaks.PYTHON_SIDE_EFFECT
            and all(is_plain(value) for value in flat)
        )
        for value in tensors:  # tensors the callout reads must be outputs of earlier graphs
            origin = origins[id(value)]
            recomputed = hoisted and check is not None and id(value) in check.positions
            if isinstance(origin, NodeOrigin) and not recomputed:
                self.segments[origin.segment].output_index(origin.node)
        callout = Callout(
            index=len(self.callouts),
            function=function,
            function_name=name,
            args=args,
            kwargs=kwargs,
            result=result,
            category=category,
            segment_before=self.current.index - 1 if hoisted else self.current.index,
            effectful=effectful,
            location=self.locate(function_name=name, category=category),
            guard_result=guard_result,
            hoisted=hoisted,
            check=check,
            deferred=deferred,
            tensor_origins=origins,
            modes=modes_now(self.entry_grad_mode, self.entry_state[INFERENCE_MODE]),
        )
        self.callouts.append(callout)
        self.keepalive.append((args, kwargs, result))
        flat_result, _ = tree_flatten(result)
        for position, value in enumerate(flat_result):
            if isinstance(value, torch.Tensor):
                self.producer[id(value)] = CalloutOrigin(callout.index, (position,))
                self.keepalive.append(value)
                callout.result_meta[id(value)] = TensorMeta.taken(value)
        if not hoisted and not deferred:
            self.segments.append(Segment(len(self.segments)))
        return callout

    def _hoist(
        self, tensors: list[torch.Tensor], origins: dict, recompute: bool = True
    ) -> tuple[bool, DataCheck | None]:
        """Whether a value read of ``tensors`` (``origins``: id -> Origin) may run in front
        of the current segment (see data_checks), and the check graph it then reads from
        (None: not needed; ``recompute`` False: a read that needs one stays in place)."""
        segment = self.current
        updated = segment.updated_storages
        if segment.sized_by_data:
            return False, None  # a check graph would be compiled for today's sizes
        if None in updated or any(storage_key(t) in updated for t in tensors):
            return False, None  # read after the segment updated it: it must wait its turn
        made_here = [
            t
            for t in tensors
            if isinstance(origins[id(t)], NodeOrigin) and origins[id(t)].segment == segment.index
        ]
        if not made_here:
            return True, None
        if not recompute:
            return False, None
        check = plan_check(segment, made_here)
        if check is None:
            return False, None
        segment.data_checks.append(check)
        return True, check

    def call_sites(self) -> tuple[list, list, list]:
        """Where the callouts were made: those that split a graph, the data checks in
        front of one, and the effects made after one."""
        located = [c for c in self.callouts if c.location is not None]
        return (
            [c.location for c in located if c.splits_graph],
            [c.location for c in located if c.hoisted],
            [c.location for c in located if c.deferred],
        )

    def use_for_output(self, tensor: torch.Tensor, before: int | None = None) -> Origin:
        """Origin of a tensor the mock needs (return value, stored state); ``before``: as it
        was when the callout at that position was made (a store the mock makes there)."""
        origin = None if before is None else self.producer.before(id(tensor), before)
        origin = origin or self.origin_of(tensor)
        if isinstance(origin, NodeOrigin):
            self.segments[origin.segment].output_index(history.check(tensor, origin.node))
        return origin

    def finish(self) -> None:
        """Close the segment graphs (each ends in the grad mode and autocast state the
        call started with) and note the global state the function returns with."""
        self.exit_grad_mode, self.exit_anomaly = segment_modes.exit_state(
            self.entry_state, self.entry_autocast
        )
        for segment in self.segments:
            segment_modes.close(segment, self.entry_grad_mode)
            self._clone_mutated_inputs(segment)
            segment.graph.output(tuple(segment.outputs))
            for check in reversed(segment.data_checks):  # their slices, if nothing else uses them
                segment.op_count -= drop_unused(segment, check)

    def _clone_mutated_inputs(self, segment: Segment) -> None:
        origins = dict(segment.placeholders)
        if not segment.mutated_placeholders:
            return
        # Placeholders are made when a tensor is first used, possibly inside a no_grad
        # region the graph switched to: move them all to the top, and clone there, under
        # the grad mode the call started with (a clone made under no_grad would cut the
        # parameter out of autograd).
        graph = segment.graph
        first = next((n for n in graph.nodes if n.op != "placeholder"), None)
        if first is not None:
            for node, _ in segment.placeholders:
                first.prepend(node)
        last_placeholder = [n for n in graph.nodes if n.op == "placeholder"][-1]
        for node in reversed(segment.mutated_placeholders):
            with graph.inserting_after(last_placeholder):
                work = graph.call_method("clone", (node,))
            node.replace_all_uses_with(
                work, delete_user_cb=lambda user, work=work: user is not work
            )
            segment.outputs = [work if out is node else out for out in segment.outputs]
            segment.writebacks.append((origins[node], segment.output_index(work)))


_INDEXING = (torch.Tensor.__getitem__, torch.Tensor.__setitem__)


def _held_tensors(values: list, depth: int = 0) -> list[torch.Tensor]:
    """The tensors in the attributes of plain objects among ``values``
    (``kl_divergence(p, q)`` of two distributions the call made)."""
    found = []
    for value in values:
        if isinstance(value, (torch.Tensor, type, torch.nn.Module)) or is_plain(value):
            continue
        state = getattr(value, "__dict__", None)
        if type(state) is dict and depth < 2:
            items = tree_flatten(list(state.values()))[0]
            found += [item for item in items if isinstance(item, torch.Tensor)]
            found += _held_tensors(items, depth + 1)
    return found
