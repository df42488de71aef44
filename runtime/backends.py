"""Graph backends: how a captured fx graph becomes something callable.

- ``"inductor"``: ``torch._inductor.compile_fx`` (C++/OpenMP kernels on CPU,
  Triton kernels on CUDA);
- ``"eager"``: run the fx GraphModule as Python (for tests about capture);
- any callable with the ``torch.compile`` backend signature
  ``backend(gm, example_inputs) -> callable``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import torch

from fullgraph.runtime import torch_internals
from fullgraph.runtime.capture.data_checks import draws_random

Backend = Callable[[torch.fx.GraphModule, list], Callable[..., Any]]


def eager_backend(gm: torch.fx.GraphModule, example_inputs: list) -> Callable[..., Any]:
    if not _holds_cond(gm):
        return gm.forward
    # torch.cond called eagerly checks and traces its branches on every call (ms):
    # run the branch its predicate picks as Python, as the program itself would.
    runnable = copy.deepcopy(gm)
    _branch_in_python(runnable)
    return runnable.forward


def eager_cond(pred: torch.Tensor, true_fn, false_fn, operands: tuple):
    """``torch.cond`` as the eager backend runs it: the picked branch, called."""
    return (true_fn if bool(pred) else false_fn)(*operands)


def _holds_cond(gm: torch.fx.GraphModule) -> bool:
    return any(node.target is torch_internals.cond_op() for node in gm.graph.nodes)


def _branch_in_python(gm: torch.fx.GraphModule) -> None:
    for node in gm.graph.nodes:
        if node.target is torch_internals.cond_op():
            node.target = eager_cond
    for child in gm.children():
        if isinstance(child, torch.fx.GraphModule):
            _branch_in_python(child)
    gm.recompile()


def _draws_random(gm: torch.fx.GraphModule) -> bool:
    return any(draws_random(node) for node in gm.graph.nodes)


# Dtypes whose kernels see a Python float differently from Inductor: Inductor hands
# a float that varies between calls (a lifted scalar, ``.item()`` of a float64 input)
# to its C++ kernels as a 32-bit ``float``, so a float64 kernel computes with the
# rounded number (``x % 1.1``, ``x ** k``, ``1e300`` becomes inf), and a float16 /
# bfloat16 op no longer raises eager's "cannot be converted without overflow"; a
# complex64 one fails to compile (a data-dependent guard on the float).
_SCALAR_SENSITIVE = frozenset(
    {torch.float64, torch.complex128, torch.complex64, torch.float16, torch.bfloat16}
)


def _rounds_lifted_floats(gm: torch.fx.GraphModule, example_inputs: list) -> bool:
    """Whether Inductor would compute this graph's varying Python floats in float32
    where eager computes in double (or checks the range of a half-precision op)."""
    placeholders = [node for node in gm.graph.nodes if node.op == "placeholder"]
    lifted = any(
        isinstance(value, torch.Tensor)
        and value.dim() == 0
        and value.dtype is torch.float64
        and any(user.op == "call_method" and user.target == "item" for user in node.users)
        for node, value in zip(placeholders, example_inputs)
    )
    if not lifted:
        return False
    if torch.get_default_dtype() in _SCALAR_SENSITIVE:
        return True
    tensors = (v for v, n in zip(example_inputs, placeholders) if isinstance(v, torch.Tensor))
    if any(t.dtype in _SCALAR_SENSITIVE and t.dim() > 0 for t in tensors):
        return True
    # A dtype the graph makes such tensors in (``x.double()``, ``dtype=torch.half``).
    named = {"double", "half", "bfloat16", "float64", "float16"}
    for node in gm.graph.nodes:
        if node.op == "call_method" and node.target in named:
            return True
        for value in (*node.args, *node.kwargs.values()):
            if isinstance(value, torch.dtype) and value in _SCALAR_SENSITIVE:
                return True
    return False


def inductor_backend(gm: torch.fx.GraphModule, example_inputs: list) -> Callable[..., Any]:
    if _rounds_lifted_floats(gm, example_inputs):
        return eager_backend(gm, example_inputs)  # correct first: torch's own kernels
    return torch_internals.compile_fx(gm, example_inputs, _draws_random(gm))


def inductor_dynamic_backend(gm: torch.fx.GraphModule, example_inputs: list) -> Callable[..., Any]:
    """Inductor with symbolic sizes, for a graph whose input sizes vary between calls
    (random ops draw eager's numbers here too)."""
    if _rounds_lifted_floats(gm, example_inputs):
        return eager_backend(gm, example_inputs)
    torch_internals.keep_saved_buffers()
    return torch.compile(
        gm,
        backend="inductor",
        dynamic=True,
        fullgraph=True,
        options=torch_internals.inductor_options(_draws_random(gm)),
    )


def inductor_unbacked_backend(gm: torch.fx.GraphModule, example_inputs: list) -> Callable[..., Any]:
    """Inductor for a graph with an op whose output sizes depend on data (``nonzero``):
    traced on fake inputs under a ShapeEnv, so those sizes are unbacked symbols."""
    if _rounds_lifted_floats(gm, example_inputs):
        return eager_backend(gm, example_inputs)
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
