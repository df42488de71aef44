"""Runtime helpers that generated compiled wrappers import."""

from __future__ import annotations

import importlib
from typing import Any

import torch

from fullgraph.runtime.backends import inductor_backend


def resolve(module: str, qualname: str) -> Any:
    """The object named ``qualname`` in ``module`` (``resolve("torch", "Tensor.add")``)."""
    value: Any = importlib.import_module(module)
    for part in qualname.split("."):
        value = getattr(value, part)
    return value


def higher_order_cond(pred, true_graph, false_graph, operands):
    """``torch.ops.higher_order.cond`` behind a plain function that fx tracing can record."""
    return torch.ops.higher_order.cond(pred, true_graph, false_graph, operands)


def compile_graph(graph: torch.nn.Module, example_inputs: list) -> Any:
    """Trace a generated graph class back into fx and compile it with Inductor."""
    gm = torch.fx.symbolic_trace(graph)
    return inductor_backend(gm, example_inputs)
