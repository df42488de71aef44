"""fullgraph.runtime — a monitoring JIT compiler for eager PyTorch code.

- ``compile(fn_or_module, *, backend="inductor")`` returns a compiled callable
  (also usable as a decorator).  The first call runs the real program under
  observation; later calls whose guard passes replay the record: guard ->
  compiled graph(s) -> mock, without the interpreter.
- ``explain(fn, *args, **kwargs)`` runs the program once under observation and
  returns a :class:`Report` (graphs, breaks, guards, mocks, side effects).
- ``generate_wrapper(fn, *args, **kwargs)`` writes the standalone compiled
  wrapper module for one entrypoint.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from fullgraph.runtime.breaks import CATEGORIES, GraphBreak
from fullgraph.runtime.compiled import CompiledFunction, Stats
from fullgraph.runtime.compiled_module import CompiledModule, compiled_module_class, construct
from fullgraph.runtime.cpython import UnsupportedPythonError, check_supported
from fullgraph.runtime.report import Report

__version__ = "0.1.0"
__all__ = [
    "CATEGORIES",
    "CompiledFunction",
    "CompiledModule",
    "GraphBreak",
    "Report",
    "Stats",
    "UnsupportedPythonError",
    "check_supported",
    "compile",
    "explain",
    "generate_wrapper",
]


def compile(
    fn_or_module: Callable | None = None,
    *,
    backend: Any = "inductor",
    recompile_limit: int = 8,
    eager_check: bool = True,
    merge_branches: bool = True,
):
    """Compile a function or ``nn.Module`` with the monitoring JIT.

    Works as ``compile(model)``, ``compile(fn, backend="eager")`` and as a
    decorator, with or without arguments.  ``eager_check``: after a record's
    first replays, time a few calls of it against the plain function and run
    eagerly if eager is faster (see docs/runtime.md).  ``merge_branches``: a
    function whose only eager calls are branches on tensor data (``if x.sum() >
    0:``) is explored path by path and recorded as one graph with ``torch.cond``;
    False records each path as it runs (graph, mid-guard, graph).
    """

    def make(target):
        arguments = (target, backend, recompile_limit, eager_check)
        if isinstance(target, torch.nn.Module):  # a module too: a parent registers it
            kind = compiled_module_class(type(target))
            return construct(kind, *arguments, merge_branches=merge_branches)
        return CompiledFunction(*arguments, merge_branches=merge_branches)

    return make if fn_or_module is None else make(fn_or_module)


def explain(fn: Callable, *args, **kwargs) -> Report:
    """One monitoring run of ``fn(*args, **kwargs)``; nothing is compiled or cached."""
    from fullgraph.runtime.explanation import explain_call

    return explain_call(fn, args, kwargs)


def generate_wrapper(fn: Callable, *args, entrypoint: str | None = None, **kwargs) -> str:
    """Source of a standalone module that replays ``fn``'s record (see docs/runtime.md).

    ``entrypoint`` ("package.module:function", the zero-argument builder of
    ``fn`` and its sample inputs) lets the module rebuild a model in a fresh
    process; a plain module-level function needs none.
    """
    from fullgraph.runtime.wrapper.generate import generate_wrapper_source

    return generate_wrapper_source(fn, args, kwargs, entrypoint=entrypoint)
