"""Exploring every path of data-dependent branches, so they merge into one graph.

After a monitoring run whose only eager calls were ``bool(t)`` of tensors (the
program branched on data and did nothing else a graph can't hold), the monitor
runs the function again, once per *path*, to record each outcome of each
branch as a straight line of ops (``capture/merged_branches.py`` merges them
into one graph with ``torch.cond``):

- In a path run, ``bool(t)`` is not a split: it is a branch point whose
  outcome is given (``decisions``) or, past those, the data's own.  The first
  path follows the data, as the real run did; each later one flips one outcome
  of an earlier path and lets the data decide after it, until every outcome of
  every branch point reached has been run (at most :data:`MAX_PATHS` paths).
- Path runs are speculative: they must change nothing eager would not have
  (``monitor/speculation.py``).  A print, a store into any object, an in-place
  update of an outside tensor, autograd, a random draw or any other eager call
  ends the exploration, and the record is made from the real run as before
  (graph, mid-guard, graph).  torch's generator is put back after them.
- They run in the same :class:`MonitorRun` as the real call, so what any path
  reads from outside is read by the run, and the one guard checks all of it.

Only pure tensor computation between the branch points is merged: so nothing
but the graph's outputs depends on which path a later call takes, and the
merged graph is the program's answer whatever the data decides.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any

import torch

from fullgraph.runtime import breaks
from fullgraph.runtime.capture.data_checks import draws_random, storage_key
from fullgraph.runtime.capture.merged_branches import (
    BranchPoint,
    NotMergeable,
    PathGraph,
    merge,
    path_graph,
)
from fullgraph.runtime.capture.segments import Segment
from fullgraph.runtime.capture.tape import GraphTape
from fullgraph.runtime.monitor import muted_output
from fullgraph.runtime.monitor.speculation import SpeculationBlocked
from fullgraph.runtime.monitor.speculative_writes import OutsideWrites
from fullgraph.runtime.record.mock_support import restore_rng, rng_state
from fullgraph.runtime.torch_internals import (
    autocast_state,
    global_state,
    restore_torch_state,
    torch_state,
    tree_flatten,
)

if TYPE_CHECKING:
    from fullgraph.runtime.monitor.driver import Monitor
    from fullgraph.runtime.monitor.run import MonitorRun

# Paths run at most (each is one more monitoring run of the function), and branch
# points one path may reach.
MAX_PATHS = 8
MAX_POINTS = 64


class Branching:
    """A path run's ``bool(t)`` reads: branch points instead of eager calls."""

    def __init__(self, decisions: tuple[bool, ...]):
        self.decisions = decisions
        self.points: list[BranchPoint] = []

    def read(self, run: MonitorRun, func: Any, args: tuple, kwargs: dict) -> bool:
        tensor = args[0]
        tape = run.tape
        node = tape.node_for(tensor)
        index = len(self.points)
        outcome = self.decisions[index] if index < len(self.decisions) else func(*args, **kwargs)
        if index >= MAX_POINTS:  # a flipped outcome no data takes may never end a loop
            raise SpeculationBlocked(f"reaches more than {MAX_POINTS} branch points")
        ops = sum(1 for n in tape.current.graph.nodes if n.op != "placeholder")
        line = run.locate("Tensor.__bool__", breaks.TENSOR_VALUE_READ).line
        self.points.append(BranchPoint(node, ops, bool(outcome), line))
        return bool(outcome)


class _Path:
    def __init__(self, tape: GraphTape, points: list[BranchPoint], result: Any):
        self.tape, self.points, self.result = tape, points, result
        self.leaves, self.spec = tree_flatten(result)
        self.tensors = [x for x in self.leaves if isinstance(x, torch.Tensor)]

    @property
    def outcomes(self) -> tuple[bool, ...]:
        return tuple(point.outcome for point in self.points)


def is_branch_read(callout: Any) -> bool:
    return (
        callout.category is breaks.TENSOR_VALUE_READ
        and getattr(callout.function, "__name__", "") == "__bool__"
    )


def eligible(run: MonitorRun) -> bool:
    """Whether the real run's eager calls were only branches on tensor data, with no
    effect a path run would have to repeat."""
    tape = run.tape
    return (
        bool(tape.callouts)
        and all(is_branch_read(c) for c in tape.callouts)
        and tape.unsupported is None
        and not run.unsupported
        and not run.not_recordable
        and not run.mutations
        and not run.injected_at_start
        and run.shapes is None
        and not run.symbolic_sources
        and not any(s.writebacks or s.mutated_placeholders for s in tape.segments)
        and not any(draws_random(n) for s in tape.segments for n in s.graph.nodes)
    )


def result_to_record(
    monitor: Monitor, run: MonitorRun, call, result: Any, python_branches: bool = True
) -> Any:
    """After the real run: when its eager calls were only branches on data, run the
    other paths and merge them (the run's tape becomes the merged graph).  Returns
    what the record is made from: the first path's result, or else ``result``.
    ``python_branches``: the backend runs a torch.cond as Python (the eager one)."""
    if monitor.tool_error is not None or not eligible(run):
        return result
    merged, first_result = merge_branches(monitor, run, call, python_branches)
    return first_result if merged else result


def merge_branches(
    monitor: Monitor, run: MonitorRun, call, python_branches: bool = True
) -> tuple[bool, Any]:
    """Run every path and, when they merge, make the run's tape the merged one.
    Returns (merged, the result the record replays: the first path's)."""
    main = run.tape
    real_outcomes = tuple(bool(c.result) for c in main.callouts)
    saved_rng = rng_state()
    # What a path may add to the run: one that does is not merged, and what it added
    # is taken back (it never ran for real).
    lengths = [len(found) for found in _grown_by_paths(run)]
    paths: list[_Path] = []
    try:
        queue: list[tuple[tuple[bool, ...], int]] = [((), 0)]
        while queue:
            if len(paths) == MAX_PATHS:
                raise NotMergeable(f"more than {MAX_PATHS} paths")
            decisions, free_from = queue.pop(0)
            path = _run_path(monitor, run, call, main, decisions, lengths)
            outcomes = path.outcomes
            queue += [
                (outcomes[:i] + (not outcomes[i],), i + 1) for i in range(free_from, len(outcomes))
            ]
            paths.append(path)
        if paths[0].outcomes != real_outcomes:
            raise NotMergeable("the first path did not take the real run's branches")
        _check_results(run, paths)
        _install(paths, python_branches)
        run.tape = run.main_tape = paths[0].tape
        run.unmerged_tape = main
    except Exception as error:  # noqa: BLE001 - NotMergeable, or a fullgraph bug
        run.tape = run.main_tape = main
        for found, length in zip(_grown_by_paths(run), lengths):
            del found[length:]
        why = error if isinstance(error, NotMergeable) else f"internal error {error!r}"
        run.merge_note = f"data-dependent branches not merged: {why}"
        return False, None
    finally:
        restore_rng(saved_rng)
    # Reported as reads that need no split (the editor's information, not a break).
    run.merged_reads = [
        dataclasses.replace(c.location, detail="merged into the graph (torch.cond)")
        for c in main.callouts
        if c.location is not None
    ]
    lines = sorted({p.line for path in paths for p in path.points})
    run.merge_note = (
        f"data-dependent branches merged into one graph (torch.cond): {len(paths)} paths "
        f"through the branches at line{'s' if len(lines) > 1 else ''} " + ", ".join(map(str, lines))
    )
    return True, paths[0].result


# Stands in for the object a speculative run may write to: a path may write to none.
_NO_TARGET = object()


class _Settings:
    """torch's process settings before a path runs, put back after it: a path the data
    does not take must leave them as eager does (``torch.set_grad_enabled(False)``,
    ``torch.set_default_dtype``, anomaly detection, an autocast region entered)."""

    def __init__(self) -> None:
        self.values = self._now()

    @staticmethod
    def _now() -> dict:
        return {
            "the default dtype": torch.get_default_dtype(),
            "the float32 matmul precision": torch.get_float32_matmul_precision(),
            "anomaly detection": (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()),
            "deterministic algorithms": (
                torch.are_deterministic_algorithms_enabled(),
                torch.is_deterministic_algorithms_warn_only_enabled(),
            ),
            "grad mode or autocast": torch_state(),
        }

    def restore(self) -> str | None:
        """Put them back; the first that had changed (None: none)."""
        now = self._now()
        changed = next((name for name in self.values if now[name] != self.values[name]), None)
        restore_torch_state(self.values["grad mode or autocast"])
        torch.set_default_dtype(self.values["the default dtype"])
        torch.set_float32_matmul_precision(self.values["the float32 matmul precision"])
        torch.autograd.set_detect_anomaly(*self.values["anomaly detection"])
        enabled, warn_only = self.values["deterministic algorithms"]
        torch.use_deterministic_algorithms(enabled, warn_only=warn_only)
        return changed


def _grown_by_paths(run: MonitorRun) -> tuple[list, ...]:
    return run.unsupported, run.not_recordable, run.mutations


def _run_path(
    monitor: Monitor,
    run: MonitorRun,
    call,
    main: GraphTape,
    decisions: tuple[bool, ...],
    lengths: list[int],
) -> _Path:
    settings_now = global_state()
    if (
        torch.is_grad_enabled() != main.entry_grad_mode
        or autocast_state() != main.entry_autocast
        or settings_now != {k: main.entry_state[k] for k in settings_now}
    ):
        raise NotMergeable("the function returned with torch settings it changed")
    tape = GraphTape(run.resolve_external, run.locate, run.lift)
    run.tape = run.main_tape = tape
    branching = Branching(decisions)
    run.branching, run.speculating, run.speculation_problem = branching, _NO_TARGET, None
    settings = _Settings()
    try:
        with OutsideWrites(run), muted_output.muted():
            result = monitor.execute(call, finish=False)
    except SpeculationBlocked as blocked:
        raise NotMergeable(f"a path {blocked}, which it may not do before it is taken") from None
    except Exception as error:  # noqa: BLE001 - the program's own error on that path
        raise NotMergeable(f"a path raised {type(error).__name__}") from None
    finally:
        problem = run.speculation_problem
        run.branching, run.speculating, run.speculation_problem = None, None, None
        changed = settings.restore()  # a path the data does not take leaves them alone
    if monitor.tool_error is not None:
        error, monitor.tool_error = monitor.tool_error, None  # the real run was fine
        raise NotMergeable(f"internal error while running a path: {error!r}")
    if problem is not None:
        raise NotMergeable(f"a path {problem}")
    if tape.unsupported is not None:
        raise NotMergeable(f"a path: {tape.unsupported.detail}")
    if tape.callouts or len(tape.segments) != 1:
        what = tape.callouts[0].function_name if tape.callouts else "something"
        raise NotMergeable(f"a path calls {what}, which must run eagerly")
    if [len(found) for found in _grown_by_paths(run)] != lengths:
        raise NotMergeable("a path changes state")
    if changed:
        raise NotMergeable(f"a path changes {changed}")
    if any(draws_random(n) for n in tape.current.graph.nodes):
        raise NotMergeable("a path draws random numbers")
    return _Path(tape, branching.points, result)


def _check_results(run: MonitorRun, paths: list[_Path]) -> None:
    """The paths return the same structure: the same objects from outside, equal plain
    values, tensors alike in metadata, none of them from outside or sharing memory with
    another (torch.cond's outputs are fresh tensors of one metadata whichever branch
    runs)."""
    first = paths[0]
    for path in paths:
        if path.spec != first.spec or not _same(run, first.result, path.result):
            raise NotMergeable("the paths return different values (or different objects)")
        storages = [storage_key(t) for t in path.tensors]
        if None in storages or len(set(storages)) != len(storages):
            raise NotMergeable("returned tensors share memory")
        for t in path.tensors:
            if not path.tape.computed(t):
                raise NotMergeable("a path returns a tensor from outside unchanged")
        outside = {
            storage_key(node.meta["example_value"])
            for node, _ in path.tape.current.placeholders
            if isinstance(node.meta.get("example_value"), torch.Tensor)
        }
        if outside & set(storages):
            raise NotMergeable("a path returns a view of a tensor from outside")


def _same(run: MonitorRun, a: Any, b: Any, depth: int = 0) -> bool:
    """Whether two paths' results are one value: an object from outside must be the very
    object; a float equal to the sign (``-0.0``); containers item by item."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and _meta(a) == _meta(b)
    if run.source_of(a) is not None or run.source_of(b) is not None:
        return a is b
    if type(a) is not type(b) or depth > 32:
        return False
    if isinstance(a, float):
        return _same_float(a, b)
    if isinstance(a, complex):
        return _same_float(a.real, b.real) and _same_float(a.imag, b.imag)
    if isinstance(a, (int, str, bytes, bool, type(None), torch.dtype, torch.device)):
        return a == b
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(run, x, y, depth + 1) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(run, a[k], b[k], depth + 1) for k in a)
    leaves_a, spec_a = tree_flatten(a)
    leaves_b, spec_b = tree_flatten(b)
    if len(leaves_a) == 1 and leaves_a[0] is a:  # not a container torch knows: this object
        return a is b
    return spec_a == spec_b and all(_same(run, x, y, depth + 1) for x, y in zip(leaves_a, leaves_b))


def _same_float(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


def _meta(t: torch.Tensor) -> tuple:
    return (t.shape, t.stride(), t.dtype, t.device, t.layout, t.requires_grad)


def _install(paths: list[_Path], python_branches: bool) -> None:
    """Merge the paths' graphs and make the first path's tape hold the merged graph, its
    returned tensors bound to the merged outputs (the mock rebuilds the result from them)."""
    graphs: list[PathGraph] = []
    examples: dict = {}
    for path in paths:
        segment = path.tape.current
        outputs = [path.tape.node_for(t) for t in path.tensors]
        graphs.append(path_graph(segment, path.points, outputs))
        for node, origin in segment.placeholders:
            examples.setdefault(origin.source, node.meta["example_value"])
    requires_grad = [t.requires_grad for t in paths[0].tensors]
    with torch.set_grad_enabled(paths[0].tape.entry_grad_mode):
        merged = merge(graphs, examples, requires_grad, one_sided_grads=python_branches)
    tape = paths[0].tape
    old = tape.current
    segment = Segment(0, graph=merged.graph, placeholders=merged.placeholders)
    segment.submodules = merged.submodules
    segment.inference_mode = old.inference_mode
    for node, _ in merged.placeholders:
        segment.env[id(node.meta["example_value"])] = node
    ops = [n for n in merged.graph.nodes if n.op not in ("placeholder", "output")]
    segment.op_count = len(ops)
    segment.op_counts = {"cond": merged.conds}
    _validate(segment, merged.outputs, paths[0])
    tape.segments = [segment]
    for tensor, node in zip(paths[0].tensors, merged.outputs):
        tape.bind(tensor, node)


def _validate(segment: Segment, outputs: list, first: _Path) -> None:
    """Run the merged graph once on the call's tensors: it must give the first path's
    outputs (it is that path, with the other outcomes beside it)."""
    holder = torch.nn.Module()
    for name, module in segment.submodules.items():
        holder.add_module(name, module)
    graph = torch.fx.Graph()
    copies: dict = {}
    graph.graph_copy(segment.graph, copies)
    graph.output(tuple(copies[node] for node in outputs))
    module = torch.fx.GraphModule(holder, graph)
    inputs = [node.meta["example_value"] for node, _ in segment.placeholders]
    try:
        with torch.no_grad():
            got = module(*inputs)
        for a, b in zip(got, first.tensors):
            torch.testing.assert_close(a, b.detach(), rtol=0, atol=0, equal_nan=True)
    except Exception as error:  # noqa: BLE001 - torch.cond's own rules (aliasing, metadata)
        raise NotMergeable(f"the merged graph failed its check ({type(error).__name__})") from None
