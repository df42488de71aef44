"""Operations whose output sizes depend on tensor data, kept inside the graph.

``torch.nonzero(mask)``, ``x[mask]``, ``masked_select``, ``unique``,
``torch.where(cond)``: what they return has as many rows as the data says.
When nothing in Python depends on those sizes, the op stays in the graph and
torch traces it with an unbacked size symbol (Inductor compiles such a graph
on fake inputs under a ShapeEnv, ``runtime/backends.py``), so one graph
serves any data, as Dynamo's ``capture_dynamic_output_shape_ops`` does.

The tape follows which tensors have such sizes (``GraphTape.shaped_by_data``):
every output of an op that takes one in, but for a whole-tensor reduction.
Python reading one of their sizes (``idx.shape[0]``, ``idx.numel()``,
``len(idx)``, ``for i in idx``), a later graph taking such a tensor in (it
would be compiled for one size) or a graph that fails to compile with the
symbol makes the run not recorded (:func:`keep_as_callouts`, reported as
FG203 where it happened); the compiled function's later monitoring runs keep
these ops as callouts between graphs, whose result sizes the record can follow
(``symbolic/shapes.py``), as before.
"""

from __future__ import annotations

from typing import Any

import torch

from fullgraph.runtime import breaks
from fullgraph.runtime.capture.origins import NodeOrigin
from fullgraph.runtime.torch_internals import tree_flatten

# Ops whose output sizes torch can trace as unbacked symbols.
IN_GRAPH_OPS = frozenset(["nonzero", "masked_select", "unique", "unique_consecutive", "argwhere"])


def may_enter_graph(run: Any, func: Any, name: str) -> bool:
    """Whether this data-dependent op goes into the graph of the run's main tape."""
    if not run.sized_by_data_in_graph or run.tape is not run.main_tape:
        return False
    if run.shapes is not None and run.shapes.active:
        return False  # sizes followed: as a callout's result, its sizes can be followed too
    # torch.where(cond) is nonzero by another name; x[mask] is masked_select's.
    return name in IN_GRAPH_OPS or func is torch.where or name == "__getitem__"


def keep_as_callouts(run: Any, why: str) -> None:
    """The run can't keep its data-dependent sizes symbolic: not recorded, and its
    function's later runs make those ops callouts."""
    # Decided for the next runs (CompiledFunction keeps it): this run goes on as it began.
    run.keeps_sized_by_data_out = True
    note = f"{why}; its data-dependent ops run between graphs from now on"
    if note not in run.not_recordable:
        run.not_recordable.append(note)
        # Reported where it happened (the report lists a run's unsupported sites as breaks).
        run.unsupported.append(run.locate("<size read>", breaks.DATA_DEPENDENT_SHAPE, why))


def shaped_by_data(tape: Any, value: Any) -> bool:
    return isinstance(value, torch.Tensor) and id(value) in tape.shaped_by_data


# Reductions of a whole tensor: one number, whatever the input's sizes.
_FULL_REDUCTIONS = frozenset(
    [
        "sum",
        "mean",
        "prod",
        "amax",
        "amin",
        "max",
        "min",
        "norm",
        "all",
        "any",
        "std",
        "var",
        "count_nonzero",
        "nansum",
        "nanmean",
    ]
)


def propagate(tape: Any, func: Any, args: tuple, kwargs: dict, inputs: list, result: Any) -> None:
    """The outputs of an op that takes a tensor sized by data are sized by data too,
    but for a reduction of the whole tensor (``rows.sum()``: shape ``()`` always)."""
    if not tape.shaped_by_data or not any(shaped_by_data(tape, x) for x in inputs):
        return
    name = getattr(func, "__name__", "")
    if name in _FULL_REDUCTIONS and len(args) == 1 and not kwargs:
        return
    mark(tape, result)


def mark(tape: Any, result: Any) -> None:
    for value in tree_flatten(result)[0]:
        if isinstance(value, torch.Tensor):
            tape.shaped_by_data.add(id(value))
    tape.current.sized_by_data = True


def crossing(tape: Any) -> str | None:
    """A graph that takes in a tensor sized by data from an earlier graph (it would be
    compiled for today's size), or None."""
    for segment in tape.segments:
        for node, origin in segment.placeholders:
            example = node.meta.get("example_value")
            if isinstance(origin, NodeOrigin) and shaped_by_data(tape, example):
                return "a tensor whose size depends on data is used after a graph break"
    return None
