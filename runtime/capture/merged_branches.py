"""Data-dependent branches merged into one graph: ``if norm > limit:`` as a ``torch.cond``.

A program that branches on tensor data (``if mask.sum() > 0:``, ``if
torch.isnan(x).any():``, an early exit once every sample is confident) runs
one path per call.  Recorded as it ran, the record is graph, value read,
mid-guard, graph, and a call whose data takes the other path misses there.
When every path is pure tensor computation, the record can instead hold one
graph that decides inside itself, as MagPy's "branches merged" and as
``torch.cond`` (which runs only the branch its predicate picks, so an untaken
branch can neither raise nor feed NaN into the gradients the way computing
both and selecting with ``torch.where`` would).

``monitor/branch_exploration.py`` runs the function once per *path*: a
straight-line execution whose ``bool(t)`` reads are not splits but
:class:`BranchPoint` s (the tensor asked, how many ops the graph had then,
the outcome taken).  This module merges those paths into one graph:

- up to a branch point, every path that shares the decisions before it ran the
  same ops (checked node by node; a difference refuses the merge);
- at the branch point the paths part by outcome, and each side becomes a
  ``torch.cond`` branch built the same way, recursively, from its paths;
- every side must be reached by some path (the exploration ran every
  outcome), so whatever a later call's data decides, the graph has its path.

What the caller checks (``branch_exploration``): each path is one graph with no
callout, store or random draw, returns the same structure with equal plain
values and tensors of equal metadata, and no returned tensor is an input or
shares memory with another output (``torch.cond`` outputs are fresh tensors).
"""

from __future__ import annotations

import dataclasses
import math
import operator
from typing import Any

import torch
import torch.fx
from torch.fx.node import map_arg

from fullgraph.runtime.capture.origins import ExternalOrigin
from fullgraph.runtime.capture.segments import Segment
from fullgraph.runtime.torch_internals import (
    cond_op,
    enter_autocast_op,
    exit_autocast_op,
    set_grad_enabled_op,
)


class NotMergeable(Exception):
    """The paths cannot become one graph; the message says why (for the report)."""


@dataclasses.dataclass
class BranchPoint:
    """A ``bool(t)`` of a path: ``pred`` is t's node in the path's graph."""

    pred: torch.fx.Node
    ops_before: int  # ops the path's graph had when the program asked
    outcome: bool
    line: int = 0  # where the program asked (for the report)


@dataclasses.dataclass
class PathGraph:
    """One path's graph, split into what the merge needs."""

    placeholders: dict[torch.fx.Node, Any]  # node -> source of the outside tensor
    ops: list[torch.fx.Node]
    points: list[BranchPoint]
    outputs: list[torch.fx.Node]  # the returned tensors' nodes, in flatten order


def path_graph(segment: Segment, points: list[BranchPoint], outputs: list) -> PathGraph:
    """A path's one segment as a :class:`PathGraph` (NotMergeable: it has something a
    ``torch.cond`` branch cannot hold)."""
    if segment.submodules or segment.mutated_placeholders or segment.sized_by_data:
        raise NotMergeable("a path holds a torch.cond, an in-place input update or a data size")
    placeholders = {}
    for node, origin in segment.placeholders:
        if not isinstance(origin, ExternalOrigin):
            raise NotMergeable("a path's graph takes a value that is not from outside")
        placeholders[node] = origin.source
    mode_ops = {set_grad_enabled_op(), enter_autocast_op(), exit_autocast_op()}
    ops = []
    for node in segment.graph.nodes:
        if node.op in ("placeholder", "output"):
            continue
        if node.op not in ("call_function", "call_method") or node.target in mode_ops:
            raise NotMergeable("a path changes grad mode or autocast inside its graph")
        ops.append(node)
    return PathGraph(placeholders, ops, points, outputs)


@dataclasses.dataclass
class MergedGraph:
    graph: torch.fx.Graph
    placeholders: list[tuple[torch.fx.Node, ExternalOrigin]]
    outputs: list[torch.fx.Node]  # in the paths' output order
    submodules: dict[str, torch.fx.GraphModule]
    conds: int


def merge(
    paths: list[PathGraph], examples: dict, requires_grad: list[bool], one_sided_grads: bool
) -> MergedGraph:
    """One graph computing every path, deciding at each branch point with ``torch.cond``.
    ``examples``: source -> the outside tensor (example value of its placeholder);
    ``requires_grad``: whether each output does (in every path); ``one_sided_grads``:
    whether a tensor from outside that requires grad may be used by one branch only
    (the eager backend runs the picked branch as Python; torch.cond's backward would
    give it zeros where eager leaves its ``.grad`` None)."""
    if len({len(p.outputs) for p in paths}) != 1:
        raise NotMergeable("the paths return different numbers of tensors")
    root = _Scope(torch.fx.Graph(), None, len(paths))
    root.one_sided_grads = one_sided_grads
    placeholders: dict[Any, torch.fx.Node] = {}
    for index, path in enumerate(paths):
        for node, source in path.placeholders.items():
            if source not in placeholders:
                new = root.graph.placeholder(node.target)
                new.meta["example_value"] = examples[source]
                placeholders[source] = new
            root.env[index][node] = placeholders[source]
    outputs = _emit(root, paths, list(range(len(paths))), 0, 0)
    # torch.cond's outputs all require grad when an operand does; eager's need not.
    outputs = [
        out if grad else root.graph.call_method("detach", (out,))
        for out, grad in zip(outputs, requires_grad)
    ]
    return MergedGraph(
        root.graph,
        [(node, ExternalOrigin(source)) for source, node in placeholders.items()],
        outputs,
        root.submodules,
        root.conds,
    )


class _Scope:
    """A graph being built (the outer one or a cond branch) and, per path, which of its
    nodes stands for each node of that path's graph.  A branch reaches a value of an
    enclosing graph through an operand placeholder of its own."""

    def __init__(self, graph: torch.fx.Graph, parent: _Scope | None, paths: int):
        self.graph = graph
        self.parent = parent
        self.env: list[dict[torch.fx.Node, torch.fx.Node]] = [{} for _ in range(paths)]
        self.operands: dict[torch.fx.Node, torch.fx.Node] = {}  # parent node -> placeholder
        self.submodules: dict[str, torch.fx.GraphModule] = {}
        self.conds = 0
        self.one_sided_grads = parent.one_sided_grads if parent is not None else True

    def outside_tensor(self, node: torch.fx.Node) -> torch.Tensor | None:
        """The tensor from outside the call that ``node`` stands for, if it is one."""
        scope = self
        while node.op == "placeholder" and scope.parent is not None:
            node = next(outer for outer, inner in scope.operands.items() if inner is node)
            scope = scope.parent
        if node.op != "placeholder":
            return None
        return node.meta.get("example_value")

    def get(self, path: int, node: torch.fx.Node) -> torch.fx.Node:
        found = self.env[path].get(node)
        if found is not None:
            return found
        if self.parent is None:
            raise NotMergeable("a path uses a value computed after the paths parted")
        outer = self.parent.get(path, node)
        if outer not in self.operands:
            placeholder = self.graph.placeholder(f"operand{len(self.operands)}")
            placeholder.meta.update(outer.meta)
            self.operands[outer] = placeholder
        return self.operands[outer]

    def copy(self, path: int, node: torch.fx.Node) -> torch.fx.Node:
        new = self.graph.node_copy(node, lambda n: self.get(path, n))
        self.env[path][node] = new
        return new


def _emit(scope: _Scope, paths: list[PathGraph], group: list[int], depth: int, start: int):
    """Emit the ops of ``group``'s paths from op ``start`` on into ``scope``; they agree on
    their first ``depth`` outcomes.  Returns the output nodes."""
    if len(group) == 1:
        (only,) = group
        for node in paths[only].ops[start:]:
            scope.copy(only, node)
        return [scope.get(only, node) for node in paths[only].outputs]
    if any(len(paths[i].points) <= depth for i in group):
        raise NotMergeable("paths with the same outcomes ran different branch points")
    ends = {paths[i].points[depth].ops_before for i in group}
    if len(ends) != 1:
        raise NotMergeable("paths with the same outcomes ran different ops")
    (end,) = ends
    lead = group[0]
    for k in range(start, end):
        new = scope.copy(lead, paths[lead].ops[k])
        for other in group[1:]:
            _check_same(scope, lead, paths[lead].ops[k], other, paths[other].ops[k])
            scope.env[other][paths[other].ops[k]] = new
    preds = {scope.get(i, paths[i].points[depth].pred) for i in group}
    if len(preds) != 1:
        raise NotMergeable("paths with the same outcomes asked about different tensors")
    taken = [i for i in group if paths[i].points[depth].outcome]
    untaken = [i for i in group if not paths[i].points[depth].outcome]
    if not taken or not untaken:
        raise NotMergeable("a branch point's other outcome was not explored")
    graph = scope.graph
    pred = graph.call_method("bool", (graph.call_method("reshape", (preds.pop(), ())),))
    sides = []
    for side in (taken, untaken):
        inner = _Scope(torch.fx.Graph(), scope, len(paths))
        outputs = _emit(inner, paths, side, depth + 1, end)
        sides.append((inner, outputs))
    # Each value once: two operands that are one tensor would alias (torch.cond refuses).
    operands = list(dict.fromkeys(outer for inner, _ in sides for outer in inner.operands))
    if not scope.one_sided_grads and torch.is_grad_enabled():
        for outer in operands:
            tensor = scope.outside_tensor(outer)
            used_by_both = all(outer in inner.operands for inner, _ in sides)
            if isinstance(tensor, torch.Tensor) and tensor.requires_grad and not used_by_both:
                raise NotMergeable(
                    "a tensor from outside that requires grad is used on one side only "
                    "(torch.cond would give it a zero gradient, eager none)"
                )
    names = []
    for label, (inner, outputs) in zip(("true", "false"), sides):
        name = f"merged_{label}_{len(scope.submodules) // 2}"
        scope.submodules[name] = _branch_module(inner, outputs, operands, name)
        names.append(name)
    node = graph.call_function(
        cond_op(), (pred, graph.get_attr(names[0]), graph.get_attr(names[1]), tuple(operands))
    )
    scope.conds += 1 + sum(inner.conds for inner, _ in sides)
    count = len(sides[0][1])
    return [graph.call_function(operator.getitem, (node, k)) for k in range(count)]


def _branch_module(
    inner: _Scope, outputs: list, operands: list[torch.fx.Node], name: str
) -> torch.fx.GraphModule:
    """The branch as a module whose placeholders are all of the cond's operands, in order
    (the other branch's are unused here)."""
    body = inner.graph
    fresh = []
    for node in outputs:
        if node.op == "placeholder":
            # A value from before the branch, returned unchanged: torch.cond's outputs
            # may not alias its inputs (and nothing else sees this one: a copy is it).
            node = body.call_method("clone", (node,))
        fresh.append(node)
    body.output(tuple(fresh))
    graph = torch.fx.Graph()
    val_map = {}
    for position, outer in enumerate(operands):
        placeholder = graph.placeholder(f"operand{position}")
        placeholder.meta.update(outer.meta)
        if outer in inner.operands:
            val_map[inner.operands[outer]] = placeholder
    result = graph.graph_copy(body, val_map)
    graph.output(result)
    holder = torch.nn.Module()
    for sub_name, module in inner.submodules.items():
        holder.add_module(sub_name, module)
    return torch.fx.GraphModule(holder, graph, class_name=name.title().replace("_", ""))


def _check_same(scope: _Scope, a: int, node_a, b: int, node_b) -> None:
    """Two paths' ops at one position before they part must be the same op on the same
    values (the program ran the same code on the same state)."""
    if node_a.op != node_b.op or node_a.target != node_b.target:
        raise NotMergeable(f"paths with the same outcomes ran {node_a.target} and {node_b.target}")
    args_a = map_arg((node_a.args, node_a.kwargs), lambda n: scope.get(a, n))
    args_b = map_arg((node_b.args, node_b.kwargs), lambda n: scope.get(b, n))
    try:
        same = bool(_same_structure(args_a, args_b))
    except Exception:  # noqa: BLE001 - constants that don't compare: not provably the same
        same = False
    if not same:
        raise NotMergeable(f"paths with the same outcomes called {node_a.target} differently")


def _same_structure(x: Any, y: Any) -> bool:
    if isinstance(x, torch.fx.Node) or isinstance(y, torch.fx.Node):
        return x is y
    if type(x) is not type(y):
        return False
    if isinstance(x, (tuple, list)):
        return len(x) == len(y) and all(_same_structure(i, j) for i, j in zip(x, y))
    if isinstance(x, dict):
        return x.keys() == y.keys() and all(_same_structure(x[k], y[k]) for k in x)
    if isinstance(x, slice):
        return _same_structure((x.start, x.stop, x.step), (y.start, y.stop, y.step))
    if isinstance(x, float) and math.isnan(x):
        return math.isnan(y)  # NaN constants
    return x == y
