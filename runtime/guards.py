"""Guard generation: readable Python that checks a record still applies.

A guard re-reads every external value the monitoring run read, through the
same source path, and compares it: tensors by metadata (type, dtype, device,
shape, requires_grad — not data), scalars and strings by value, containers by
length and the elements read, modules and functions by identity, plus
aliasing between paths and the global state that changes results (grad mode,
default dtype).  Each path is evaluated once into a local.  On success the
guard returns the external tensors the graphs take as inputs, so the mock
doesn't fetch them again; on failure it returns ``None``.
"""

from __future__ import annotations

import dataclasses
import math
import types
from typing import Any

import torch

from fullgraph.runtime.codegen import Namespace, is_literal, literal
from fullgraph.runtime.guard_helpers import storages_apart
from fullgraph.runtime.sources import (
    ArgSource,
    AttrSource,
    GlobalHooksSource,
    HooksSource,
    KwargSource,
    Source,
    base_of,
)

GUARD_PARAMS = "A, K, M, F"


@dataclasses.dataclass
class GuardCode:
    source: str
    namespace: dict[str, Any]
    provenance: dict[str, str]
    check_count: int
    inputs: list[Source]


class _Writer:
    def __init__(self, namespace: Namespace, values: dict | None = None):
        self.ns = namespace
        self.values = values or {}  # source -> the object it reached during the run
        self.lines: list[str] = []
        self.locals: dict[Source, str] = {}
        self.checks = 0
        self.root_names = {"A", "K", "M", "F"}

    def load(self, source: Source) -> str:
        """Name of a local holding ``source``'s value, emitting its load once."""
        if source in self.locals:
            return self.locals[source]
        expr = source.expr()
        base = base_of(source)
        if base is not None:
            base_expr = base.expr()
            base_name = self.load(base)
            expr = self._module_slot(source, base, base_name) or expr.replace(
                base_expr, base_name, 1
            )
        if expr in self.root_names or expr in self.ns.values:
            self.locals[source] = expr
            return expr
        name = source.local_name()
        taken = set(self.locals.values())
        candidate, n = name, 1
        while candidate in taken:
            n += 1
            candidate = f"{name}_{n}"
        self.lines.append(f"{candidate} = {expr}")
        self.locals[source] = candidate
        return candidate

    def _module_slot(self, source: Source, base: Source, base_name: str) -> str | None:
        """``m._modules['fc']`` for ``m.fc``: the same object, without the Python-level
        ``Module.__getattr__`` (the bulk of a large model's guard time otherwise)."""
        owner = self.values.get(base)
        name = getattr(source, "name", None)
        if not isinstance(owner, torch.nn.Module) or not isinstance(source, AttrSource):
            return None
        for slot in ("_modules", "_parameters", "_buffers"):
            if name in getattr(owner, slot) and name not in vars(owner):
                return f"{base_name}.{slot}[{name!r}]"
        return None

    def check(self, condition: str, why: str) -> None:
        self.checks += 1
        self.lines.append(f"if not ({condition}):  # {why}")
        self.lines.append("    return None")


def tensor_check(
    name: str, tensor: torch.Tensor, ns: Namespace, dynamic_dims: frozenset = frozenset()
) -> str:
    """Metadata check; ``dynamic_dims``: sizes the record's graph does not depend on."""
    if dynamic_dims:
        sizes = [f"{name}.dim() == {tensor.dim()}"] + [
            f"{name}.shape[{d}] == {size}"
            for d, size in enumerate(tensor.shape)
            if d not in dynamic_dims
        ]
    else:
        sizes = [f"{name}.shape == {literal(tuple(tensor.shape))}"]
    if dynamic_dims:  # strides follow the sizes; the layout must still be the same
        layout = [f"{name}.is_contiguous() is {tensor.is_contiguous()}"]
    else:  # compiled kernels index memory with the strides they were built for
        layout = [f"{name}.stride() == {literal(tuple(tensor.stride()))}"]
    parts = [
        f"type({name}) is {ns.name_for(type(tensor))}",
        f"{name}.dtype is {literal(tensor.dtype)}",
        f"{name}.device == {ns.expr(tensor.device)}",
        *sizes,
        *layout,
        f"{name}.requires_grad is {tensor.requires_grad}",
    ]
    return " and ".join(parts)


def value_check(
    name: str, value: Any, source: Source, ns: Namespace, dynamic: dict | None = None
) -> tuple[str, str]:
    """The condition that ``name`` still holds what the run read, and a comment."""
    if isinstance(source, (HooksSource, GlobalHooksSource)):
        if not value:
            return f"bool({name}) is False", "no hooks"
        return f"{name} == {ns.bind(value, 'hooks_' + source.local_name())}", "hooks (identity)"
    if isinstance(value, torch.Tensor):
        dims = frozenset((dynamic or {}).get(source, ()))
        return tensor_check(name, value, ns, dims), "tensor metadata" + (
            " (dynamic sizes)" if dims else ""
        )
    if value is None or isinstance(value, bool):
        return f"{name} is {value!r}", "value"
    if isinstance(value, torch.dtype):
        return f"{name} is {literal(value)}", "dtype"
    if isinstance(value, (torch.device,)):
        return f"{name} == {ns.expr(value)}", "device"
    if is_literal(value) and not isinstance(
        value, (list, dict, set)
    ):  # mutable: items are guarded when read
        type_name = (
            type(value).__name__
            if type(value).__module__ == "builtins"
            else ns.name_for(type(value))
        )
        if isinstance(value, float) and math.isnan(value):
            return f"type({name}) is float and {name} != {name}", "value (nan)"
        return f"type({name}) is {type_name} and {name} == {literal(value)}", "value"
    if isinstance(value, IDENTITY_CHECKED):  # a function, class or builtin passed in
        return f"{name} is {ns.bind(value, _hint(value, source), provenance=source.expr())}", (
            "identity"
        )
    if isinstance(source, (ArgSource, KwargSource)) or isinstance(value, (list, dict, tuple, set)):
        return f"type({name}) is {ns.name_for(type(value))}", "type"
    if isinstance(value, types.MethodType):
        return f"{name}.__func__ is {ns.name_for(value.__func__)}", "method identity"
    return f"{name} is {ns.bind(value, _hint(value, source), provenance=source.expr())}", "identity"


# Objects a check compares by identity: one of them stays the same object.
IDENTITY_CHECKED = (
    types.FunctionType,
    types.BuiltinFunctionType,
    type,
    types.ModuleType,
)


def _identity_guarded(value: Any) -> bool:
    """Values whose guard is ``is <the object>`` (so two paths to one are aliased by it)."""
    return isinstance(value, (*IDENTITY_CHECKED, torch.nn.Module))


def _hint(value: Any, source: Source) -> str:
    if isinstance(value, (types.FunctionType, type, types.ModuleType, types.BuiltinFunctionType)):
        return getattr(value, "__name__", "obj")
    return "obj_" + source.local_name().removeprefix("v_")


def generate_guard(
    reads: dict[Source, Any],
    aliases: list[tuple[Source, Source]],
    inputs: list[Source],
    globals_consts: dict[str, dict],
    grad_mode: bool,
    default_dtype: torch.dtype,
    arg_count: int,
    kwarg_names: tuple[str, ...],
    symbolic_sources: set[Source] = frozenset(),
    conditions: list = (),
    updated_inputs: list[Source] = (),
    dynamic: dict | None = None,
    values: dict | None = None,
    entry_state: dict | None = None,
) -> GuardCode:
    ns = Namespace()
    for name, value in globals_consts.items():
        ns.values[name] = value
    writer = _Writer(ns, values)
    writer.check(f"len(A) == {arg_count} and len(K) == {len(kwarg_names)}", "call signature")
    for name in kwarg_names:
        writer.check(f"{name!r} in K", f"keyword argument {name}")
    writer.check(f"torch.is_grad_enabled() is {grad_mode}", "grad mode")
    writer.check(f"torch.get_default_dtype() is {literal(default_dtype)}", "default dtype")
    for expression, value in (entry_state or {}).items():
        writer.check(f"{expression} is {literal(value)}", "global torch state")
    for source, value in reads.items():
        name = writer.load(source)
        if source in symbolic_sources:  # a scalar that varies: lifted, so only its type matters
            writer.check(
                f"type({name}) is {type(value).__name__}", f"type of symbolic {source.expr()}"
            )
            continue
        condition, why = value_check(name, value, source, ns, dynamic)
        writer.check(condition, f"{why} of {source.expr()}")
    for condition in conditions:  # branches taken on symbolic arguments
        writer.check(condition.source(literal), condition.why)
    for first, second in aliases:
        if _identity_guarded(reads.get(first)):
            continue  # both paths are checked against the same object already
        writer.check(
            f"{writer.load(first)} is {writer.load(second)}", f"aliasing {first} / {second}"
        )
    updated_set = set(updated_inputs)
    updated = [position for position, source in enumerate(inputs) if source in updated_set]
    if updated:  # an input updated in place must share memory with no other input
        names = ", ".join(writer.load(source) for source in inputs)
        helper = ns.bind(storages_apart, "storages_apart")
        writer.check(
            f"{helper}(({names},), {tuple(updated)!r})",
            "inputs updated in place share memory with no other input: "
            + ", ".join(inputs[position].expr() for position in updated),
        )
    input_names = [writer.load(source) for source in inputs]
    body = "\n".join("        " + line for line in writer.lines)
    returned = ", ".join(input_names) + ("," if len(input_names) == 1 else "")
    source_code = (
        f"def guard({GUARD_PARAMS}):\n"
        f'    """Generated by fullgraph: does this record still apply to the call?"""\n'
        f"    try:\n{body}\n"
        f"    except (AttributeError, IndexError, KeyError, TypeError):  # a path no longer exists\n"
        f"        return None\n"
        f"    return ({returned})\n"
    )
    return GuardCode(source_code, ns.values, ns.provenance, writer.checks, list(inputs))
