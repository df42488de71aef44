"""Graph backends: how a captured fx graph becomes something callable.

- ``"inductor"``: ``torch._inductor.compile_fx`` (C++/OpenMP kernels on CPU,
  Triton kernels on CUDA);
- ``"eager"``: run the fx GraphModule as Python (for tests about capture);
- any callable with the ``torch.compile`` backend signature
  ``backend(gm, example_inputs) -> callable``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from fullgraph.runtime import inductor_random_order, torch_internals
from fullgraph.runtime.capture.data_checks import draws_random

Backend = Callable[[torch.fx.GraphModule, list], Callable[..., Any]]


def eager_backend(gm: torch.fx.GraphModule, example_inputs: list) -> Callable[..., Any]:
    return gm.forward


def _draws_random(gm: torch.fx.GraphModule) -> bool:
    return any(draws_random(node) for node in gm.graph.nodes)


def inductor_backend(gm: torch.fx.GraphModule, example_inputs: list) -> Callable[..., Any]:
    return torch_internals.compile_fx(gm, example_inputs, _draws_random(gm))


def inductor_dynamic_backend(gm: torch.fx.GraphModule, example_inputs: list) -> Callable[..., Any]:
    """Inductor with symbolic sizes, for a graph whose input sizes vary between calls
    (random ops draw eager's numbers here too)."""
    return torch.compile(
        gm,
        backend="inductor",
        dynamic=True,
        fullgraph=True,
        options=inductor_random_order.options(_draws_random(gm)),
    )


def inductor_unbacked_backend(gm: torch.fx.GraphModule, example_inputs: list) -> Callable[..., Any]:
    """Inductor for a graph with an op whose output sizes depend on data (``nonzero``):
    traced on fake inputs under a ShapeEnv, so those sizes are unbacked symbols."""
    return torch_internals.compile_fx(
        gm, torch_internals.fakes_with_shape_env(example_inputs), _draws_random(gm)
    )


def sized_by_data_variant(backend: Backend) -> Backend:
    """The backend for such a graph (the eager fx graph takes any sizes already)."""
    return inductor_unbacked_backend if backend is inductor_backend else backend


def dynamic_variant(name: str, backend: Backend) -> Backend:
    """The backend to use once sizes vary (the eager fx graph is size-generic already)."""
    return inductor_dynamic_backend if name == "inductor" else backend


def resolve(backend: str | Backend) -> tuple[str, Backend]:
    if callable(backend):
        return getattr(backend, "__name__", "custom"), backend
    if backend == "inductor":
        return "inductor", inductor_backend
    if backend == "eager":
        return "eager", eager_backend
    raise ValueError(
        f"unknown backend {backend!r}: expected 'inductor', 'eager', or a callable "
        "(gm: torch.fx.GraphModule, example_inputs: list) -> callable"
    )
