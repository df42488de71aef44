"""Guard generation: the checks that a record still applies, and their Python rendering.

A guard re-reads every external value the monitoring run read, through the
same source path, and compares it: tensors by metadata (type, dtype, device,
shape, requires_grad — not data), scalars and strings by value, containers by
length and the elements read, modules and functions by identity, plus
aliasing between paths and the global state that changes results (grad mode,
default dtype).

The checks are described once, as a list of :class:`Check` (a condition on
the values at some sources, with the reason it is there), and rendered twice:
as the readable Python function a user prints (``records[i].guard_source``),
and as a tree of torch's native guard managers that runs on every call
(``native_guards.py``).  The Python rendering evaluates each path once into a
local; on success it returns the external tensors the graphs take as inputs,
so the mock doesn't fetch them again; on failure it returns ``None``.
"""

from __future__ import annotations

import dataclasses
import math
import types
from collections.abc import Callable, Sequence
from typing import Any

import torch

from fullgraph.runtime.capture.tensor_meta import TensorMeta
from fullgraph.runtime.capture.values import is_ndarray, is_numpy_scalar
from fullgraph.runtime.record.codegen import Namespace, is_literal, literal
from fullgraph.runtime.record.guard_helpers import same_array, storages_apart
from fullgraph.runtime.record.native_leaves import NativeLeaf
from fullgraph.runtime.record.number_checks import equality_is_loose, number_check
from fullgraph.runtime.sources import (
    ArgSource,
    AttrSource,
    GlobalHooksSource,
    HooksSource,
    KwargSource,
    Source,
    base_of,
)
from fullgraph.runtime.symbolic.scalars import INT64_MAX, INT64_MIN
from fullgraph.runtime.torch_internals import default_devices

GUARD_PARAMS = "A, K, M, F"


@dataclasses.dataclass(frozen=True)
class Check:
    """One condition of a guard: on the values at ``sources``, with why it is there.

    ``condition`` renders the check as a Python expression over the names of
    locals holding the sources' values.  ``leaf`` says how native evaluation
    checks the value at ``sources[0]``; a single-source check without one runs
    its Python expression as a native lambda leaf, and a check on none or
    several sources runs in the Python rest of the guard.
    """

    sources: tuple[Source, ...]
    condition: Callable[..., str]
    why: str
    leaf: NativeLeaf | None = None

    def render(self, names: Sequence[str]) -> str:
        return self.condition(*names)


@dataclasses.dataclass
class GuardCode:
    source: str
    namespace: dict[str, Any]
    provenance: dict[str, str]
    check_count: int
    inputs: list[Source]
    checks: list[Check]
    values: dict  # source -> the object it reached during the run


class GuardRenderer:
    """Writes checks as the body of a Python function, loading each path once."""

    def __init__(self, namespace: Namespace, values: dict | None = None):
        self.ns = namespace
        self.values = values or {}  # source -> the object it reached during the run
        self.lines: list[str] = []
        self.locals: dict[Source, str] = {}
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
            expr = module_slot_expr(source, self.values.get(base), base_name) or expr.replace(
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

    def check(self, check: Check, explain: bool = False) -> None:
        names = [self.load(source) for source in check.sources]
        self.lines.append(f"if not ({check.render(names)}):  # {check.why}")
        self.lines.append(f"    return {check.why!r}" if explain else "    return None")

    def function(
        self, name: str, checks: Sequence[Check], inputs: Sequence[Source], explain: bool = False
    ) -> str:
        """``def name(A, K, M, F)``: run ``checks``, return the inputs' values or None.

        ``explain``: a failing check returns its reason instead (a path that no longer
        exists still returns None), and a passing guard returns the inputs.
        """
        for check in checks:
            self.check(check, explain)
        input_names = [self.load(source) for source in inputs]
        body = "\n".join("        " + line for line in self.lines)
        returned = ", ".join(input_names) + ("," if len(input_names) == 1 else "")
        return (
            f"def {name}({GUARD_PARAMS}):\n"
            f'    """Generated by fullgraph: does this record still apply to the call?"""\n'
            f"    try:\n{body}\n"
            f"    except (AttributeError, IndexError, KeyError, TypeError, ArithmeticError):"
            f"  # a path no longer exists (or a size fact divides by a size of 0)\n"
            f"        return None\n"
            f"    return ({returned})\n"
        )


def module_slot_slot(source: Source, owner: Any) -> str | None:
    """``"_modules"`` when ``m.fc`` is ``m._modules['fc']`` (likewise parameters, buffers)."""
    name = getattr(source, "name", None)
    if not isinstance(owner, torch.nn.Module) or not isinstance(source, AttrSource):
        return None
    for slot in ("_modules", "_parameters", "_buffers"):
        if name in getattr(owner, slot) and name not in vars(owner):
            return slot
    return None


def module_slot_expr(source: Source, owner: Any, base_name: str) -> str | None:
    """``m._modules['fc']`` for ``m.fc``: the same object, without the Python-level
    ``Module.__getattr__`` (the bulk of a large model's guard time otherwise)."""
    slot = module_slot_slot(source, owner)
    return None if slot is None else f"{base_name}.{slot}[{source.name!r}]"


def tensor_check(
    name: str,
    tensor: torch.Tensor | TensorMeta,
    ns: Namespace,
    dynamic_dims: frozenset = frozenset(),
) -> str:
    """Metadata check; ``dynamic_dims``: sizes the record's graph does not depend on.

    ``tensor``: the metadata the run met (a tensor is read as it is now).
    """
    meta = tensor if isinstance(tensor, TensorMeta) else TensorMeta.of(tensor)
    if dynamic_dims:
        sizes = [f"{name}.dim() == {meta.dim()}"] + [
            f"{name}.shape[{d}] == {size}"
            for d, size in enumerate(meta.shape)
            if d not in dynamic_dims
        ]
    else:
        sizes = [f"{name}.shape == {literal(meta.shape)}"]
    if meta.strides is None:  # a sparse tensor: no strides to compare
        layout = [
            f"{name}.layout is {ns.bind(meta.layout, str(meta.layout).replace('torch.', ''))}"
        ]
    elif dynamic_dims:  # strides follow the sizes; the layout must still be the same
        layout = [f"{name}.is_contiguous() is {meta.contiguous}"]
    elif 1 not in meta.shape or meta.strides_read:  # kernels index memory with these
        layout = [f"{name}.stride() == {literal(meta.strides)}"]
    else:  # along a dimension of size 1 every index is 0: its stride is never used
        # (``ids[:, -1:]`` of a growing sequence has a new one on every step)
        layout = [
            f"{name}.stride({d}) == {stride}"
            for d, (size, stride) in enumerate(zip(meta.shape, meta.strides))
            if size != 1
        ]
    parts = [
        f"type({name}) is {ns.name_for(meta.type)}",
        f"{name}.dtype is {literal(meta.dtype)}",
        f"{name}.device == {ns.expr(meta.device)}",
        *sizes,
        *layout,
        f"{name}.requires_grad is {meta.requires_grad}",
        *(f"{expr.format(t=name)} == {ns.expr(value)}" for expr, value in meta.facts),
    ]
    return " and ".join(parts)


def value_check(
    value: Any, source: Source, ns: Namespace, dynamic: dict | None = None
) -> tuple[Callable[[str], str], str, NativeLeaf | None]:
    """The condition that a local still holds what the run read, why, and its native leaf.

    A tensor is checked against the metadata the run met it with (``TensorMeta``).
    """
    if isinstance(source, (HooksSource, GlobalHooksSource)):
        if not value:
            return (lambda name: f"bool({name}) is False"), "no hooks", NativeLeaf("no_hooks")
        hooks = ns.bind(value, "hooks_" + source.local_name())
        return (lambda name: f"{name} == {hooks}"), "hooks (identity)", None
    if isinstance(value, (torch.Tensor, TensorMeta)):
        meta = value if isinstance(value, TensorMeta) else TensorMeta.of(value)
        dims = frozenset((dynamic or {}).get(source, ()))
        why = "tensor metadata" + (" (dynamic sizes)" if dims else "")
        return (
            (lambda name: tensor_check(name, meta, ns, dims)),
            why,
            # torch's tensor match knows no sparse or quantized facts: the Python check.
            None if meta.facts else NativeLeaf("tensor", meta, dims),
        )
    if value is None or isinstance(value, bool):
        return (lambda name: f"{name} is {value!r}"), "value", NativeLeaf("id", value)
    if isinstance(value, torch.dtype):
        return (lambda name: f"{name} is {literal(value)}"), "dtype", NativeLeaf("id", value)
    if isinstance(value, slice):  # x[idx] with idx = (slice(None), 0): compared by value
        text = repr(value)
        return (lambda name: f"type({name}) is slice and {name} == {text}"), "value", None
    if value is Ellipsis:
        return (lambda name: f"{name} is Ellipsis"), "value", NativeLeaf("id", value)
    if isinstance(value, (torch.memory_format, torch.layout)):  # singletons, like dtypes
        bound = ns.bind(value, str(value).replace("torch.", ""))
        return (lambda name: f"{name} is {bound}"), "identity", NativeLeaf("id", value)
    if is_ndarray(value):
        saved = ns.bind(value.copy(), "array_" + source.local_name().removeprefix("v_"))
        helper = ns.bind(same_array, "same_array")
        return (lambda name: f"{helper}({name}, {saved})"), "array contents", None
    if is_numpy_scalar(value):  # np.float64 is a float subclass, but not a literal
        kind = ns.name_for(type(value))
        number = value.item()
        if isinstance(number, float) and math.isnan(number):
            return (lambda name: f"type({name}) is {kind} and {name} != {name}"), "value", None
        return (
            (lambda name: f"type({name}) is {kind} and {name} == {literal(number)}"),
            "value",
            None,
        )
    if isinstance(value, (torch.device,)):
        device = ns.expr(value)
        return (lambda name: f"{name} == {device}"), "device", NativeLeaf("equals", value)
    if is_literal(value) and not isinstance(
        value, (list, dict, set)
    ):  # mutable: items are guarded when read
        type_name = (
            type(value).__name__
            if type(value).__module__ == "builtins"
            else ns.name_for(type(value))
        )
        if isinstance(value, float) and math.isnan(value):
            return (lambda name: f"type({name}) is float and {name} != {name}"), "value (nan)", None
        if equality_is_loose(value, source):
            # -0.0 == 0.0, (True,) == (1,), frozenset({1, 9}) == frozenset({9, 1}) in
            # another order: equal, yet copysign, dtype inference or iteration tell them
            # apart.  repr() tells them apart too (floats' repr is exact).
            text = repr(value)
            return (
                (lambda name: f"type({name}) is {type_name} and repr({name}) == {text!r}"),
                "value (exact)",
                None,
            )
        return (
            (lambda name: f"type({name}) is {type_name} and {name} == {literal(value)}"),
            "value",
            NativeLeaf("equals", value),
        )
    number = number_check(value, ns)
    if number is not None:  # IntEnum, class Width(int), a str subclass, Fraction, Decimal
        return number
    if isinstance(value, IDENTITY_CHECKED):  # a function, class or builtin passed in
        bound = ns.bind(value, _hint(value, source), provenance=source.expr())
        return (lambda name: f"{name} is {bound}"), "identity", NativeLeaf("id", value)
    if isinstance(source, (ArgSource, KwargSource)) or isinstance(value, (list, dict, tuple, set)):
        type_name = ns.name_for(type(value))
        return (
            (lambda name: f"type({name}) is {type_name}"),
            "type",
            NativeLeaf("type", type(value)),
        )
    if isinstance(value, torch.nn.Module) and _from_an_argument(source):
        # A submodule of a module passed in (``self.lin`` of a forward compiled once
        # for every block of a model): what the record reads of it is read again
        # through its path (weights, settings, hooks, children; two paths to one
        # module are an alias check), so its class decides, as for the argument.
        type_name = ns.name_for(type(value))
        return (
            (lambda name: f"type({name}) is {type_name}"),
            "type",
            NativeLeaf("type", type(value)),
        )
    if isinstance(value, types.MethodType):
        function = ns.name_for(value.__func__)
        return (
            (lambda name: f"{name}.__func__ is {function}"),
            "method identity",
            NativeLeaf("method", value.__func__),
        )
    bound = ns.bind(value, _hint(value, source), provenance=source.expr())
    return (lambda name: f"{name} is {bound}"), "identity", NativeLeaf("id", value)


# Objects a check compares by identity: one of them stays the same object.
IDENTITY_CHECKED = (
    types.FunctionType,
    types.BuiltinFunctionType,
    type,
    types.ModuleType,
)


def _has_memory(value: Any) -> bool:
    """A tensor, or a numpy array (which may be a view of a tensor's memory)."""
    return isinstance(value, torch.Tensor) or type(value).__name__ == "ndarray"


def _from_an_argument(source: Source) -> bool:
    while source is not None and not isinstance(source, (ArgSource, KwargSource)):
        source = base_of(source)
    return source is not None


def _identity_guarded(value: Any) -> bool:
    """Values whose guard is ``is <the object>`` wherever they are read (so two paths
    to one are aliased by it).  Not modules: one passed as an argument is checked by
    type only, and ``f(m, m)`` must not replay for ``f(m1, m2)``."""
    return isinstance(value, IDENTITY_CHECKED)


def _hint(value: Any, source: Source) -> str:
    if isinstance(value, (types.FunctionType, type, types.ModuleType, types.BuiltinFunctionType)):
        return getattr(value, "__name__", "obj")
    if isinstance(value, types.CodeType):  # ``F.__code__ is code_f``
        return "code_" + value.co_name
    return "obj_" + source.local_name().removeprefix("v_")


def _fixed(text: str) -> Callable[[], str]:
    return lambda: text


def _modes_check(devices: tuple[str, ...], ns: Namespace) -> Check:
    """The torch modes the call runs under are the run's: a ``torch.device(...)`` block
    or ``set_default_device`` puts factories on its device, and any other mode changes
    operations in ways a graph does not carry (CompiledFunction runs those eagerly)."""
    if not devices:
        return Check(
            (),
            _fixed(
                "torch._C._len_torch_function_stack() == 0"
                " and torch._C._len_torch_dispatch_stack() == 0"
            ),
            "no torch mode is active (torch.device blocks, set_default_device, others)",
        )
    helper = ns.bind(default_devices, "default_devices")
    return Check((), _fixed(f"{helper}() == {devices!r}"), "default device (torch.device blocks)")


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
    kwargs_ordered: bool = False,
    distinct: list[tuple[Source, Source]] = (),
    tensor_meta: dict | None = None,
    entry_devices: tuple[str, ...] = (),
    more_checks: Callable[[Namespace], list[Check]] | None = None,
) -> GuardCode:
    """``tensor_meta``: source -> the :class:`TensorMeta` the run first met a tensor
    read with (the call may have changed it since); ``more_checks``: checks of this
    guard's namespace that follow the reads (``isinstance`` answers)."""
    ns = Namespace()
    for name, value in globals_consts.items():
        ns.values[name] = value
    checks = [
        Check(
            (),
            _fixed(f"len(A) == {arg_count} and len(K) == {len(kwarg_names)}"),
            "call signature",
            NativeLeaf("signature", (arg_count, tuple(kwarg_names))),
        )
    ]
    for name in kwarg_names:  # the signature's native leaf checks these too
        checks.append(
            Check((), _fixed(f"{name!r} in K"), f"keyword argument {name}", NativeLeaf("covered"))
        )
    if kwargs_ordered and len(kwarg_names) > 1:
        # The function's **kwargs dict keeps the caller's order, which it may iterate.
        checks.append(
            Check(
                (),
                _fixed(f"tuple(K) == {tuple(kwarg_names)!r}"),
                "keyword argument order (the function takes **kwargs)",
            )
        )
    checks.append(Check((), _fixed(f"torch.is_grad_enabled() is {grad_mode}"), "grad mode"))
    checks.append(
        Check((), _fixed(f"torch.get_default_dtype() is {literal(default_dtype)}"), "default dtype")
    )
    checks.append(_modes_check(entry_devices, ns))
    for expression, value in (entry_state or {}).items():
        checks.append(Check((), _fixed(f"{expression} is {literal(value)}"), "global torch state"))
    for source, value in reads.items():
        if source in symbolic_sources:  # a scalar that varies: lifted, so only its type matters
            type_name = type(value).__name__
            if type_name == "int":
                # ... and, for an int, that it fits the int64 it is lifted into.
                checks.append(
                    Check(
                        (source,),
                        lambda name: (
                            f"type({name}) is int and {INT64_MIN} <= {name} <= {INT64_MAX}"
                        ),
                        f"type and range of symbolic {source.expr()}",
                    )
                )
                continue
            checks.append(
                Check(
                    (source,),
                    lambda name, type_name=type_name: f"type({name}) is {type_name}",
                    f"type of symbolic {source.expr()}",
                    NativeLeaf("type", type(value)),
                )
            )
            continue
        checked = (tensor_meta or {}).get(source, value)
        condition, why, leaf = value_check(checked, source, ns, dynamic)
        checks.append(Check((source,), condition, f"{why} of {source.expr()}", leaf))
    if more_checks is not None:
        checks.extend(more_checks(ns))
    for condition in conditions:  # branches taken on symbolic arguments
        checks.append(Check((), _fixed(condition.source(literal)), condition.why))
    for first, second in dict.fromkeys(aliases):  # one check per pair, in order
        if _identity_guarded(reads.get(first)) and second in reads:
            continue  # both paths are checked against the same object already
        checks.append(
            Check(
                (first, second),
                lambda a, b: f"{a} is {b}",
                f"aliasing {first} / {second}",
                NativeLeaf("alias"),
            )
        )
    for first, second in dict.fromkeys(distinct):  # two objects that must stay two
        checks.append(
            Check(
                (first, second),
                lambda a, b: f"{a} is not {b}",
                f"{first} and {second} are distinct objects",
            )
        )
    updated_set = set(updated_inputs)
    updated = [position for position, source in enumerate(inputs) if source in updated_set]
    for source in dict.fromkeys(updated_inputs):
        value = reads.get(source)
        if isinstance(value, torch.Tensor) and value.requires_grad:
            # In place on a leaf that requires grad eager raises; on a non-leaf it does not.
            leaf = value.is_leaf
            checks.append(
                Check(
                    (source,),
                    lambda name, leaf=leaf: f"{name}.is_leaf is {leaf}",
                    f"{source.expr()}, updated in place, is a leaf or not",
                )
            )
    if updated:  # an input updated in place must share memory with no other input
        helper = ns.bind(storages_apart, "storages_apart")
        # ... nor with a tensor only a callout reads (``y.item()`` of a view of it).
        entered = set(inputs)
        read_only = [s for s, v in reads.items() if _has_memory(v) and s not in entered]
        checks.append(
            Check(
                (*inputs, *read_only),
                lambda *names: f"{helper}(({', '.join(names)},), {tuple(updated)!r})",
                "inputs updated in place share memory with no other input: "
                + ", ".join(inputs[position].expr() for position in updated),
            )
        )
    source_code = GuardRenderer(ns, values).function("guard", checks, inputs)
    return GuardCode(
        source_code, ns.values, ns.provenance, len(checks), list(inputs), checks, values or {}
    )
