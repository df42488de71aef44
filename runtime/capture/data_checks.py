"""Data checks hoisted in front of the graph: ``if mask.all():`` without a split.

A value read such as ``bool(t)`` or ``t.item()`` must run eagerly, and the
record depends on its outcome (a mid-guard).  Placed where the program made
it, the read ends the current graph segment: graph, read, mid-guard, graph.
When the tensor it reads is computed *cheaply and purely from values that
already exist before the current segment* (the call's inputs, results of
earlier segments or callouts), the read can instead run first: a small
*check graph* recomputes that tensor from those values, the read and its
mid-guard follow, and the segment goes on as one graph with no break.
Transformers' masking code is the common case (``padding_mask.all()`` decides
whether the attention mask may be skipped).

Why this is the program's answer: the slice the check copies has no in-place
update, no random op and no autocast region, and nothing earlier in the
segment updated anything in place, so its result is the one the program
computed at that point; the ops of the segment that ran before the read in
the program are pure graph ops, so running them after the read changes
nothing observable.  What the read decides is checked exactly as before (the
same mid-guard on the same value), so a call whose data takes the other path
misses there and is monitored again, as it would at a split.

The check graph runs eagerly (it is a few ops; compiling it would cost a
compile), and the copied slice is dropped from the segment when nothing else
there uses it.
"""

from __future__ import annotations

import dataclasses
import operator
from typing import TYPE_CHECKING

import torch
import torch.fx

from fullgraph.runtime.torch_internals import enter_autocast_op

if TYPE_CHECKING:
    from fullgraph.runtime.capture.origins import Origin
    from fullgraph.runtime.capture.segments import Segment

# A slice longer than this is real work: recomputing it in front of the graph
# would cost more than the split saves.
MAX_SLICE_OPS = 16

# Ops that do real work (a matmul, a convolution, attention): a slice that needs one is
# left where it is, split and all.
_HEAVY = frozenset(
    [
        "linear",
        "bilinear",
        "matmul",
        "mm",
        "bmm",
        "addmm",
        "addbmm",
        "baddbmm",
        "einsum",
        "tensordot",
        "conv1d",
        "conv2d",
        "conv3d",
        "conv_transpose1d",
        "conv_transpose2d",
        "conv_transpose3d",
        "scaled_dot_product_attention",
        "multi_head_attention_forward",
        "embedding_bag",
        "lstm",
        "gru",
        "rnn_tanh",
        "rnn_relu",
        "cdist",
        "fft_fft",
        "stft",
    ]
)
# Ops that draw random numbers: copying one would draw twice.
_RANDOM_WORDS = (
    "rand",
    "dropout",
    "bernoulli",
    "multinomial",
    "normal",
    "poisson",
    "uniform",
    "exponential",
    "geometric",
    "cauchy",
    "rrelu",
    "standard_gamma",  # torch.distributions.Gamma / Beta / Dirichlet sampling
    "sample_dirichlet",
    "binomial",
)


# Python operators as graphs record them (``operator.and_`` for ``a & b``); the in-place
# ones among them.
_OPERATORS = frozenset(
    value for name, value in vars(operator).items() if callable(value) and not name.startswith("_")
)
_IN_PLACE_OPERATORS = frozenset(
    ["iadd", "iand", "iconcat", "ifloordiv", "ilshift", "imatmul", "imod", "imul", "ior"]
    + ["ipow", "irshift", "isub", "itruediv", "ixor", "setitem", "delitem"]
)


@dataclasses.dataclass
class DataCheck:
    """The graph a hoisted read runs on: it recomputes the tensors the read takes."""

    graph: torch.fx.Graph
    placeholders: list[tuple[torch.fx.Node, Origin]]
    positions: dict[int, int]  # id(tensor the read takes) -> position in the check's outputs
    copied: list[torch.fx.Node]  # the segment's nodes the check recomputes (program order)

    @property
    def op_count(self) -> int:
        return sum(1 for node in self.copied if node.op in ("call_function", "call_method"))


def op_name(node: torch.fx.Node) -> str:
    target = node.target
    if isinstance(target, str):
        return target
    return getattr(target, "__name__", str(target))


def draws_random(node: torch.fx.Node) -> bool:
    """Whether the node draws from torch's random generator (dropout only when training)."""
    if node.op not in ("call_function", "call_method"):
        return False
    bare = op_name(node).strip("_").lower()
    if "scaled_dot_product" in bare:  # attention's own dropout
        p = node.kwargs.get("dropout_p", node.args[4] if len(node.args) > 4 else 0.0)
        return not (isinstance(p, (int, float)) and p == 0)
    if bare in _RNN_OPS:
        return _rnn_drops_out(node.args)
    if not any(word in bare for word in _RANDOM_WORDS):
        return False
    if "dropout" in bare:
        training = node.kwargs.get("training", node.args[2] if len(node.args) > 2 else True)
        return training is not False
    return True


# torch.lstm / gru / rnn_tanh / rnn_relu, as nn.LSTM and its kin call them:
# ``(input, hx, params, has_biases, num_layers, dropout, train, ...)``, and the
# packed form with ``batch_sizes`` after ``input``.
_RNN_OPS = frozenset({"lstm", "gru", "rnn_tanh", "rnn_relu"})


def _rnn_drops_out(args: tuple) -> bool:
    """Whether an RNN call drops out between layers: its one float argument (the
    dropout probability) is not 0 and the ``train`` flag after it is not False."""
    for index, value in enumerate(args):
        if isinstance(value, float):
            train = args[index + 1] if index + 1 < len(args) else True
            return value != 0 and train is not False
    return True  # an unexpected signature: assume it draws


def _pure_and_cheap(node: torch.fx.Node) -> bool:
    if node.op not in ("call_function", "call_method"):
        return False  # get_attr (a torch.cond branch), call_module
    name = op_name(node)
    bare = name.strip("_")
    if node.op == "call_function" and node.target in _OPERATORS:
        # ``a & b`` is recorded as operator.and_: its underscore is not an in-place one.
        return name not in _IN_PLACE_OPERATORS and node.target is not operator.matmul
    if name.endswith("_") and not name.startswith("__"):
        return False  # an in-place method (add_, masked_fill_)
    if name.startswith("__i") and name.endswith("__") or name == "__setitem__":
        return False  # x += 1, x[i] = v
    if "out" in node.kwargs or node.kwargs.get("inplace") is True:
        return False
    return bare not in _HEAVY and not any(word in bare.lower() for word in _RANDOM_WORDS)


def storage_key(tensor: torch.Tensor) -> int | None:
    """What identifies the memory a tensor's data lives in (None: no plain storage)."""
    try:
        return tensor.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return None


def _touched(node: torch.fx.Node, updated: set) -> bool:
    """Whether the tensor behind ``node`` lives in memory an earlier op updated in place."""
    value = node.meta.get("example_value")
    if not isinstance(value, torch.Tensor):
        return False
    return None in updated or storage_key(value) in updated


def plan_check(segment: Segment, tensors: list[torch.Tensor]) -> DataCheck | None:
    """A check graph computing ``tensors`` (those made in ``segment``) ahead of it, or
    None when the read must stay where it is (the slice is not pure, cheap and fed by
    values that existed before the segment, untouched by its in-place updates so far)."""
    enter = enter_autocast_op()
    if any(node.target is enter for node in segment.graph.nodes):
        return None  # values computed inside an autocast region differ outside it
    roots = [segment.env[id(t)] for t in tensors]
    needed: set[torch.fx.Node] = set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        if node in needed:
            continue
        needed.add(node)
        if _touched(node, segment.updated_storages):
            return None
        if node.op == "placeholder":
            continue
        if not _pure_and_cheap(node):
            return None
        stack.extend(node.all_input_nodes)
    copied = [node for node in segment.graph.nodes if node in needed]
    if sum(1 for node in copied if node.op != "placeholder") > MAX_SLICE_OPS:
        return None
    origins = dict(segment.placeholders)
    graph = torch.fx.Graph()
    placeholders = []
    mapping: dict[torch.fx.Node, torch.fx.Node] = {}
    for node in copied:
        if node.op == "placeholder":
            new = graph.placeholder(node.target)
            new.meta["example_value"] = node.meta.get("example_value")
            placeholders.append((new, origins[node]))
        else:
            new = graph.node_copy(node, lambda arg: mapping[arg])
        mapping[node] = new
    graph.output(tuple(mapping[root] for root in roots))
    positions = {id(t): i for i, t in enumerate(tensors)}
    return DataCheck(graph, placeholders, positions, [n for n in copied if n.op != "placeholder"])


def drop_unused(segment: Segment, check: DataCheck) -> int:
    """Remove the nodes the check recomputes that nothing in the segment uses any more
    (after the segment's output node exists), and inputs left without a use; returns
    how many ops went."""
    dropped = 0
    present = set(segment.graph.nodes)  # another check may have dropped a shared node
    inputs = set()
    for node in reversed(check.copied):
        if node not in present:
            continue
        inputs.update(n for n in node.all_input_nodes if n.op == "placeholder")
        if not node.users:
            segment.graph.erase_node(node)
            present.discard(node)
            dropped += 1
    for node in inputs:
        if node in present and not node.users:
            segment.graph.erase_node(node)
            segment.placeholders = [(p, o) for p, o in segment.placeholders if p is not node]
    return dropped


def check_module(check: DataCheck, index: int) -> torch.fx.GraphModule:
    return torch.fx.GraphModule(torch.nn.Module(), check.graph, class_name=f"Check{index}")
