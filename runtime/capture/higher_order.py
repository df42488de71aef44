"""``torch.cond`` in monitored code: one graph node, both branches as subgraphs.

A user's ``torch.cond(pred, true_fn, false_fn, operands)`` (written by hand
or by the FG101 quick fix) is predicated control flow: which branch runs is
decided inside the graph, so it must not split the record the way ``if
t.sum() > 0:`` does.  Left to itself, eager ``torch.cond`` compiles its
branches with Dynamo, which would trace the monitor's own torch-function
mode; so the monitor swaps the call for :func:`capture_cond`, which

1. steps into each branch with the monitor (what the branch reads from
   ``self`` or globals is guarded like any other read) while the branch's
   torch calls go to a :class:`BranchTape` of their own;
2. checks what ``torch.cond`` requires of branches: tensor outputs of the same
   metadata, no eager calls, no Python side effects, no in-place updates;
3. emits ``torch.ops.higher_order.cond(pred, true_graph, false_graph, operands)``
   into the current segment, whose operands are the call's operands plus every
   outside tensor a branch closed over (parameters reached through ``self``).

Both branches run for real once, during the monitoring run only; the program
continues with the taken branch's outputs.  When a requirement fails, the
run is marked unsupported with the reason, and the call is handed to the real
``torch.cond`` unobserved, so the program gets what eager gives it (for a
branch that breaks torch.cond's rules, torch's own error).
"""

from __future__ import annotations

import contextlib
import dataclasses
import operator
from typing import TYPE_CHECKING, Any

import torch
import torch.fx

from fullgraph.runtime import breaks, torch_internals
from fullgraph.runtime.capture.origins import NodeOrigin
from fullgraph.runtime.capture.segments import Unsupported
from fullgraph.runtime.capture.tape import GraphTape
from fullgraph.runtime.capture.values import lifted_tensor
from fullgraph.runtime.symbolic.sizes import holds_size
from fullgraph.runtime.torch_internals import tree_flatten

if TYPE_CHECKING:
    from fullgraph.runtime.monitor.run import MonitorRun


def is_cond(fn: Any) -> bool:
    """Whether a callee is ``torch.cond``."""
    return fn is torch_internals.cond_function()


@dataclasses.dataclass(frozen=True)
class FreeOrigin:
    """A tensor from outside the branch: operand or closed-over value number ``index``."""

    index: int


class BranchTape(GraphTape):
    """The tape of one branch: tensors it did not compute become placeholders."""

    def __init__(self, run: MonitorRun, operands: list[torch.Tensor]):
        super().__init__(resolve_external=lambda tensor: None, locate=run.locate, lift=run.lift)
        self.free: list[torch.Tensor] = []
        self.lifted: dict[int, Any] = {}  # id of a free 0-d tensor -> (Sym, value)
        for tensor in operands:  # operands first, in order: they are the signature's head
            self.node_for(tensor)

    def origin_of(self, tensor: torch.Tensor):
        origin = self.producer.get(id(tensor))
        if origin is None:
            origin = FreeOrigin(len(self.free))
            self.free.append(tensor)
            self.producer[id(tensor)] = origin
            self.keepalive.append(tensor)
        return origin

    def _scalar(self, value: Any) -> Any:
        if holds_size(value):
            raise Unsupported(
                breaks.UNSUPPORTED_CONSTRUCT, "a torch.cond branch uses a tensor size that varies"
            )
        sym = self.lift(value)
        if sym is None:
            return value
        # A Python number that varies between calls: one more operand, a 0-d tensor.
        tensor = lifted_tensor(value)
        self.lifted[id(tensor)] = (sym, value)
        return self.node_for(tensor)


def capture_cond(run: MonitorRun, pred, true_fn, false_fn, operands=()):
    """Stands in for ``torch.cond`` during a monitoring run; returns the taken branch's result."""
    operands = tuple(operands)
    if not isinstance(pred, torch.Tensor):
        # A Python predicate: torch.cond just picks (its value is guarded by the caller's CALL).
        return (true_fn if pred else false_fn)(*operands)
    with unobserved(run):  # the monitor's own looks at the predicate are not the program's
        taken = bool(pred)
        valid = pred.numel() == 1 and all(isinstance(t, torch.Tensor) for t in operands)
    if not valid:
        return _as_eager(
            run,
            "needs a one-element predicate and tensor operands",
            pred,
            true_fn,
            false_fn,
            operands,
        )
    true_run = _run_branch(run, true_fn, operands, must_succeed=taken)
    false_run = _run_branch(run, false_fn, operands, must_succeed=not taken)
    chosen = true_run if taken else false_run
    with unobserved(run):
        problem = true_run.problem or false_run.problem or _mismatch(true_run, false_run)
    if problem is None:
        try:
            _emit(run, pred, taken, operands, true_run, false_run)
        except Unsupported as error:
            problem = error.detail
    if problem is not None:
        return _as_eager(run, problem, pred, true_fn, false_fn, operands)
    return chosen.result


def _as_eager(run: MonitorRun, problem: str, pred, true_fn, false_fn, operands):
    """Not capturable: the run is not compiled, and the call does what eager torch.cond does
    (which, for branches that break its rules, is to raise its own error)."""
    run.refuse(f"torch.cond not captured: {problem}")
    with unobserved(run):
        return torch_internals.cond_function()(pred, true_fn, false_fn, operands)


@dataclasses.dataclass
class _BranchRun:
    name: str
    tape: BranchTape
    result: Any = None
    leaves: list = dataclasses.field(default_factory=list)
    spec: Any = None
    problem: str | None = None


def _run_branch(run: MonitorRun, fn, operands: tuple, must_succeed: bool) -> _BranchRun:
    """Run one branch under the monitor, its torch calls recorded on a tape of its own."""
    name = getattr(fn, "__name__", "branch")
    branch = _BranchRun(name, BranchTape(run, list(operands)))
    outer, mutations = run.tape, len(run.mutations)
    run.tape = branch.tape
    try:
        branch.result = fn(*operands)
    except Exception as error:
        if must_succeed:
            raise  # the branch the program takes raised: the user sees their own error
        branch.problem = f"the untaken branch `{name}` raised {type(error).__name__}"
        return branch
    finally:
        run.tape = outer
        outer.keepalive.append(branch.tape.keepalive)
    tape = branch.tape
    branch.leaves, branch.spec = tree_flatten(branch.result)
    if tape.unsupported is not None:
        branch.problem = f"branch `{name}`: {tape.unsupported.detail}"
    elif tape.callouts:
        branch.problem = (
            f"branch `{name}` calls `{tape.callouts[0].function_name}`, which must run eagerly"
        )
    elif len(run.mutations) != mutations or tape.current.mutated_placeholders:
        branch.problem = f"branch `{name}` has a side effect (an in-place update or a store)"
    elif not branch.leaves or not all(isinstance(x, torch.Tensor) for x in branch.leaves):
        branch.problem = f"branch `{name}` must return tensors"
    return branch


def _mismatch(true_run: _BranchRun, false_run: _BranchRun) -> str | None:
    if true_run.spec != false_run.spec:
        return "the branches return different structures"
    for a, b in zip(true_run.leaves, false_run.leaves):
        if (a.shape, a.dtype, a.device, a.layout) != (b.shape, b.dtype, b.device, b.layout):
            return (
                "the branches return tensors of different metadata: "
                f"{tuple(a.shape)} {a.dtype} vs {tuple(b.shape)} {b.dtype}"
            )
    return None


def _subgraph(branch: _BranchRun, free: list[torch.Tensor]) -> torch.fx.GraphModule:
    """The branch's graph with placeholders in the order of ``free`` (shared by both)."""
    tape = branch.tape
    old = tape.current.graph
    graph = torch.fx.Graph()
    by_tensor = {
        id(tape.free[origin.index]): node
        for node, origin in tape.current.placeholders
        if isinstance(origin, FreeOrigin)
    }
    val_map = {}
    for position, tensor in enumerate(free):
        node = graph.placeholder(f"operand{position}")
        node.meta["example_value"] = tensor
        if id(tensor) in by_tensor:
            val_map[by_tensor[id(tensor)]] = node
    outputs = []
    for leaf in branch.leaves:
        node = tape.node_for(leaf)
        if not isinstance(tape.origin_of(leaf), NodeOrigin):
            # Returning an input unchanged would alias it; torch.cond wants fresh outputs.
            node = old.call_method("clone", (node,))
        outputs.append(node)
    old.output(tuple(outputs))
    result = graph.graph_copy(old, val_map)
    graph.output(result)
    return torch.fx.GraphModule(torch.nn.Module(), graph, class_name=f"Branch_{branch.name}")


@contextlib.contextmanager
def unobserved(run: MonitorRun):
    """Torch calls made by the monitor itself, not recorded as the program's."""
    saved = run.paused, run.mode.paused
    run.paused = run.mode.paused = True
    try:
        yield
    finally:
        run.paused, run.mode.paused = saved


def _emit(run: MonitorRun, pred, taken: bool, operands: tuple, true_run, false_run) -> None:
    tape = run.tape
    free: list[torch.Tensor] = []
    for tensor in [*operands, *true_run.tape.free, *false_run.tape.free]:
        if all(tensor is not seen for seen in free):
            free.append(tensor)
    segment = tape.current
    pred_node = tape.node_for(pred)
    lifted = {**true_run.tape.lifted, **false_run.tape.lifted}
    operand_nodes = tuple(
        tape.lifted_placeholder(*lifted[id(tensor)])
        if id(tensor) in lifted
        else tape.node_for(tensor)
        for tensor in free
    )
    tape.sync_grad_mode(segment)
    number = sum(1 for name in segment.submodules if name.startswith("cond_true"))
    names = (f"cond_true_{number}", f"cond_false_{number}")
    for name, branch in zip(names, (true_run, false_run)):
        segment.submodules[name] = _subgraph(branch, free)
    node = segment.graph.call_function(
        torch_internals.cond_op(),
        (
            pred_node,
            segment.graph.get_attr(names[0]),
            segment.graph.get_attr(names[1]),
            operand_nodes,
        ),
    )
    segment.op_count += 1
    segment.op_counts["cond"] = segment.op_counts.get("cond", 0) + 1
    chosen = true_run if taken else false_run
    for position, leaf in enumerate(chosen.leaves):
        tape.bind(leaf, segment.graph.call_function(operator.getitem, (node, position)))
