"""What a tape is made of: graph segments, the callouts between them, and refusals.

A :class:`Segment` is one fx graph of the run (its placeholders, outputs and
in-place updates of inputs); a :class:`Callout` is a call replayed eagerly
between two segments; :class:`Unsupported` is raised where the run did
something the capture cannot record faithfully.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch
import torch.fx

from fullgraph.runtime import breaks
from fullgraph.runtime.capture.data_checks import DataCheck
from fullgraph.runtime.capture.origins import Origin


@dataclasses.dataclass
class Segment:
    index: int
    graph: torch.fx.Graph = dataclasses.field(default_factory=torch.fx.Graph)
    env: dict[int, torch.fx.Node] = dataclasses.field(default_factory=dict)
    placeholders: list[tuple[torch.fx.Node, Origin]] = dataclasses.field(default_factory=list)
    outputs: list[torch.fx.Node] = dataclasses.field(default_factory=list)
    grad_mode: bool | None = None  # grad mode of the last op recorded in this graph
    inference_mode: bool | None = None  # inference mode of its ops (one for all of them)
    op_count: int = 0
    op_counts: dict[str, int] = dataclasses.field(default_factory=dict)
    mutates_external: bool = False
    # Whether each outside tensor it updates can be saved and put back with its values
    # (not one inside autograd's history: copying back would rewrite that history).
    restorable: bool = True
    # Placeholders the graph updates in place.  Each is cloned at the top of the
    # graph and the clone returned, so the graph itself has no input mutation
    # (Inductor/AOTAutograd need none); the mock copies the result back.
    mutated_placeholders: list[torch.fx.Node] = dataclasses.field(default_factory=list)
    # Open torch.autocast regions: (the _enter_autocast node, the settings inside it).
    autocast_stack: list = dataclasses.field(default_factory=list)
    writebacks: list[tuple[Origin, int]] = dataclasses.field(default_factory=list)
    size_nodes: dict[str, torch.fx.Node] = dataclasses.field(default_factory=dict)  # by expression
    # Graphs the segment's nodes call through ``get_attr`` (the branches of a torch.cond).
    submodules: dict[str, torch.fx.GraphModule] = dataclasses.field(default_factory=dict)
    # Storages the segment's ops have updated in place so far (None: one without a storage).
    updated_storages: set = dataclasses.field(default_factory=set)
    data_checks: list[DataCheck] = dataclasses.field(default_factory=list)  # hoisted in front
    sized_by_data: bool = False  # holds an op whose output sizes depend on data (nonzero)

    def output_index(self, node: torch.fx.Node) -> int:
        if node not in self.outputs:
            self.outputs.append(node)
        return self.outputs.index(node)


@dataclasses.dataclass
class Callout:
    """A call replayed eagerly between two segments."""

    index: int
    function: Callable
    function_name: str
    args: tuple
    kwargs: dict
    result: Any
    category: breaks.BreakCategory
    segment_before: int  # the last segment that runs before this callout (-1: none)
    effectful: bool  # replaying it has an effect outside the program (print, I/O)
    location: Any = None  # breaks.GraphBreak, filled by the monitor
    guard_result: bool = True  # the rest of the run depends on the exact returned value
    # It may change state outside the program (``Q.get_nowait()``, ``it.__next__()``, an
    # unknown C call): made again by the monitoring run after a miss, it would take a
    # second item.  A miss after it hands its result over instead (``resume_on_miss``).
    changes_state: bool = False
    # It sets state to what it sets whenever it is made (``model.eval()``): a run after
    # a miss makes it again where the program does, rather than being handed its result.
    remade_on_rerun: bool = False
    conditions: list = dataclasses.field(default_factory=list)  # symbolic.Condition after it
    arg_syms: dict = dataclasses.field(default_factory=dict)  # position -> Sym
    # Set when the read runs in front of the segment it was made in (no split there):
    # the check graph recomputing the tensors it reads, or None when they existed already.
    hoisted: bool = False
    check: DataCheck | None = None
    # An output effect of plain values (print, logging, warnings) made after the graph of
    # the segment it was called in, which goes on past it (no split).
    deferred: bool = False
    # id(tensor argument) -> its origin when the call was made: an in-place update later
    # in the run rebinds the tensor to the updating node, which runs after the call.
    tensor_origins: dict = dataclasses.field(default_factory=dict)
    # id(tensor in the result) -> its TensorMeta as returned (a mid-guard checks that,
    # not what the rest of the run made of it: ``c.requires_grad_()``).
    result_meta: dict = dataclasses.field(default_factory=dict)
    # It changed a list the function made, which the callout after it reads back
    # (``random.shuffle(idx)``): never held back behind that read's mid-guard.
    changes_arguments: bool = False
    # What the call changed that the run read before it: a tensor a graph read, updated
    # in place (``opt.step()`` and the forward's weights), or training state read
    # (``lr`` before ``scheduler.step()``): its source's text, else None.
    changed_input: str | None = None
    # The grad mode and inference mode it was made in, when not the call's entry ones
    # (a call inside the function's ``no_grad`` block): the mock makes it in them too.
    modes: tuple[bool, bool] | None = None

    @property
    def splits_graph(self) -> bool:
        return not self.hoisted and not self.deferred


class Unsupported(Exception):
    """The run did something the capture cannot record faithfully."""

    def __init__(self, category: breaks.BreakCategory, detail: str):
        super().__init__(detail)
        self.category = category
        self.detail = detail


def modes_now(entry_grad: bool, entry_inference: bool) -> tuple[bool, bool] | None:
    """Grad mode and inference mode now, when either is not the call's entry one."""
    modes = torch.is_grad_enabled(), torch.is_inference_mode_enabled()
    return modes if modes != (entry_grad, entry_inference) else None
