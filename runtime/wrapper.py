"""The generated compiled wrapper: one entrypoint's record as a standalone module.

The module holds, as readable Python: each graph segment as an
``nn.Module`` (the fx code), the guard, the mock, and a loader.  On first
call the loader builds the target (by importing the entrypoint, or the
function itself), re-binds the constants the guard compares against (read
through the same source paths, so identity checks refer to this process's
objects), and compiles the graphs with Inductor.  Every call then runs
guard -> graphs -> mock and falls back to the original callable when the
guard (or a mid-guard) fails.
"""

from __future__ import annotations

import builtins
import re
import types
from collections.abc import Callable
from typing import Any

import torch

from fullgraph.runtime.compiled import CompiledFunction
from fullgraph.runtime.record import Record

_HELPERS = (
    "MISS",
    "Missed",
    "make_dataclass_instance",
    "make_plain_object",
    "leaves",
    "write_back",
    "rng_state",
    "restore_rng",
)


class WrapperError(RuntimeError):
    """The record holds something a standalone module cannot re-create."""


def generate_wrapper_source(
    fn: Callable, args: tuple, kwargs: dict, entrypoint: str | None = None
) -> str:
    compiled = CompiledFunction(fn, backend="eager")
    compiled(*args, **kwargs)
    if not compiled.records:
        raise WrapperError(f"no reusable record: {compiled.stats.fallback_reason}")
    record = compiled.records[0]
    target = _target_expression(fn, entrypoint)
    return _render(record, target, fn)


def _target_expression(fn: Callable, entrypoint: str | None) -> str:
    if entrypoint:
        module, _, name = entrypoint.partition(":")
        return f"resolve({module!r}, {name!r})()[0]"
    if isinstance(fn, types.FunctionType) and "<locals>" not in fn.__qualname__:
        return f"resolve({fn.__module__!r}, {fn.__qualname__!r})"
    raise WrapperError(
        "a compiled wrapper needs an importable target: pass the entrypoint "
        "('package.module:function') that builds this model"
    )


def _graph_class(index, gm: torch.fx.GraphModule, prefix: str = "Graph") -> tuple[str, set[str]]:
    """The class source of graph ``index`` (and of the subgraphs it calls, such as the
    branches of a torch.cond, as classes named after it), and the globals it needs."""
    parts, names, children = [], set(), []
    for child_name, child in gm.named_children():
        text, child_globals = _graph_class(f"{index}_{child_name}", child, prefix)
        parts.append(text)
        names |= child_globals
        children.append(f"        self.{child_name} = {prefix}{index}_{child_name}()")
    text, own = _graph_forward(index, gm, children, prefix)
    return "\n\n".join([*parts, text]), names | own


def _graph_forward(
    index, gm: torch.fx.GraphModule, children: list[str], prefix: str = "Graph"
) -> tuple[str, set[str]]:
    code = gm.graph.python_code(root_module="self")
    src = code.src.replace("torch.ops.higher_order.cond(", "higher_order_cond(")
    names = {
        name for name in code.globals if name not in ("torch", "inf", "nan", "NoneType", "device")
    }
    lines = []
    for line in src.strip("\n").splitlines():
        # fx frees intermediates with "x = None" statements joined by ";  "
        statements = [s for s in line.split(";  ") if not re.fullmatch(r"\s*[\w\s=]+= None\s*", s)]
        if statements:
            indent = re.match(r"\s*", line).group(0)
            lines.extend(indent + s.strip() if i else s for i, s in enumerate(statements))
    body = "\n".join("    " + line if line.strip() else "" for line in lines)
    init = ""
    if children:
        init = (
            "    def __init__(self):\n        super().__init__()\n" + "\n".join(children) + "\n\n"
        )
    return f"class {prefix}{index}(torch.nn.Module):\n{init}{body}\n", names


def _import_line(name: str, value: Any) -> str:
    if isinstance(value, types.ModuleType):
        return f"{name} = importlib.import_module({value.__name__!r})"
    if isinstance(value, torch.device):
        return f"{name} = torch.device({str(value)!r})"
    if isinstance(value, dict) and "__name__" in value and value.get("__builtins__") is not None:
        return f"{name} = vars(importlib.import_module({value['__name__']!r}))"
    owner = getattr(value, "__objclass__", None)
    if owner is not None:
        return (
            f"{name} = resolve({owner.__module__!r}, {owner.__qualname__ + '.' + value.__name__!r})"
        )
    module = getattr(value, "__module__", None)
    qualname = getattr(value, "__qualname__", None)
    if module is None and getattr(value, "__self__", None) is builtins:
        module = "builtins"
    if module and qualname and "<locals>" not in qualname:
        return f"{name} = resolve({module!r}, {qualname!r})"
    raise WrapperError(
        f"cannot re-create the constant {name} ({type(value).__name__}) in a new process"
    )


def _render(record: Record, target: str, fn: Callable) -> str:
    constants: dict[str, Any] = {}
    constants.update(record.guard_namespace)
    constants.update(record.mock_namespace)
    graph_names = {f"graph{i}" for i in range(len(record.graphs))} | set(record.check_graphs)
    bound_late, import_lines = [], []
    for name, value in constants.items():
        if name in ("torch", "builtins") or name in _HELPERS or name in graph_names:
            continue
        if name in record.provenance:
            bound_late.append((name, record.provenance[name]))
        else:
            import_lines.append(_import_line(name, value))
    classes, graph_globals = [], set()
    for index, gm in enumerate(record.graphs):
        if f"graph{index}" not in record.mock_source:
            continue
        text, names = _graph_class(index, gm)
        classes.append(text)
        graph_globals |= names
    # Data checks in front of the graphs: small graphs the mock runs eagerly.
    checks = []
    for name, gm in record.check_graphs.items():
        index = name.removeprefix("check")
        text, names = _graph_class(index, gm, prefix="Check")
        classes.append(text)
        graph_globals |= names
        checks.append(f"{name} = Check{index}()  # eager: a few ops")
    every_graph = [*record.graphs, *record.check_graphs.values()]
    for name in sorted(graph_globals):
        import_lines.append(_graph_global_line(name, every_graph))
    used_graphs = [i for i in range(len(record.graphs)) if f"graph{i}(" in record.mock_source]
    late = "\n".join(f"    {name} = {expr}" for name, expr in bound_late)
    late_globals = ", ".join(["M", "F"] + [n for n, _ in bound_late])
    declared = "\n".join(f"{n} = None  # bound by _load()" for n, _ in bound_late)
    graphs_declared = "\n".join(f"graph{i} = None  # compiled on first use" for i in used_graphs)
    lazy_lines = "\n".join(f"    graph{i} = _compile_on_first_call({i})" for i in used_graphs)
    return f'''"""Compiled wrapper generated by fullgraph for {getattr(fn, "__qualname__", type(fn).__name__)}.

guard -> compiled graph(s) -> mock; the original callable runs whenever the
guard or a mid-guard fails.  Regenerate with `fullgraph compile`; don't edit.
"""

import importlib

import torch

# fullgraph's helpers, imported by name so the module sorts the same whichever
# package ruff or isort takes fullgraph to be.
_mock = importlib.import_module("fullgraph.runtime.mock")
_support = importlib.import_module("fullgraph.runtime.wrapper_support")
MISS, Missed, leaves, write_back = _mock.MISS, _mock.Missed, _mock.leaves, _mock.write_back
make_dataclass_instance, make_plain_object = _mock.make_dataclass_instance, _mock.make_plain_object
rng_state, restore_rng = _mock.rng_state, _mock.restore_rng
compile_graph, resolve = _support.compile_graph, _support.resolve
# torch.cond's operator, recorded (not run) when compile_graph traces a graph class.
higher_order_cond = _support.higher_order_cond
torch.fx.wrap("higher_order_cond")

__all__ = ["compiled"]

{chr(10).join(import_lines)}
M = None  # the module being compiled (bound by _load())
F = None  # the function being compiled (bound by _load())
TARGET = None
{declared}
{graphs_declared}
_READY = False
_HELPERS = (MISS, Missed, leaves, write_back, make_dataclass_instance, make_plain_object)  # used by mocks
_RNG_HELPERS = (rng_state, restore_rng)  # used by mocks whose graphs draw random numbers


{chr(10).join(classes)}
{chr(10).join(checks)}

{record.guard_source}

{record.mock_source}

def _compile_on_first_call(index):
    """A stand-in for graph<index> that compiles it with Inductor on its first inputs."""

    def first_call(*args):
        compiled_graph = compile_graph(globals()[f"Graph{{index}}"](), list(args))
        globals()[f"graph{{index}}"] = compiled_graph
        return compiled_graph(*args)

    return first_call


def _load():
    """Build the target, re-bind the guard's constants, set up the graphs."""
    global {late_globals}, TARGET, _READY{"".join(", graph" + str(i) for i in used_graphs)}
    TARGET = {target}
    M = TARGET if isinstance(TARGET, torch.nn.Module) else None
    F = type(TARGET).forward if M is not None else TARGET
{late if late else "    pass"}
{lazy_lines if lazy_lines else "    pass"}
    _READY = True


def compiled(*args, **kwargs):
    """Run the record when its guard passes; the original callable otherwise."""
    if not _READY:
        _load()
    inputs = guard(args, kwargs, M, F)
    if inputs is None:
        return TARGET(*args, **kwargs)
    result = mock(inputs, args, kwargs, M, F)
    if isinstance(result, Missed):
        return TARGET(*args, **kwargs)
    return result
'''


def _graph_global_line(name: str, graphs: list[torch.fx.GraphModule]) -> str:
    for gm in (module for graph in graphs for module in graph.modules()):  # subgraphs too
        code = gm.graph.python_code(root_module="self")
        if name in code.globals:
            return _import_line(name, code.globals[name])
    raise WrapperError(f"unknown graph global {name}")
