"""Native guard evaluation: a record's checks as a tree of torch's C++ guard managers.

The guard a user prints (``records[i].guard_source``) is Python; running it
costs about a microsecond per check, which on a transformer (hundreds of
checks) is a large share of a batch-1 step.  torch ships the machinery
Dynamo uses for the same job (``torch._C._dynamo.guards``): a root manager
whose children are accessors (attribute, item, a Python lambda) and whose
leaves are checks (identity, equality with type, type, tensor metadata).
This module renders the same list of :class:`~fullgraph.runtime.record.guards.Check`
as such a tree:

- each source becomes a manager reached from its base by the same path the
  Python guard loads (``m._modules['fc']`` for a submodule, ``getattr`` for
  an attribute, ``[key]`` for an item, a lambda for computed values such as
  ``len(x)``);
- each check on one source becomes a native leaf where one exists with the
  same meaning, and otherwise its own Python expression run as a lambda leaf;
- checks on no source (grad mode, the global torch state, conditions on
  symbolic values) or on several (aliasing, shared storage) stay in a small
  Python function, the *rest*, that runs after the tree passes and also
  fetches the graph inputs.

Only leaves that cannot raise on a value of another type are used (a
length check on a non-sequence leaves an exception set in torch's C++ code):
every other condition is a lambda leaf, whose exceptions count as a miss.
The tree accepts a subset of what the Python guard accepts (tensor checks
also compare dispatch keys), never more; ``FULLGRAPH_GUARD_PARITY=1`` runs
both on every call, and the test suite fails on a call the tree passes and
Python does not.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Callable
from typing import Any

import torch

from fullgraph.runtime.capture.tensor_meta import TensorMeta
from fullgraph.runtime.record.codegen import Namespace, compile_source
from fullgraph.runtime.record.guards import Check, GuardCode, GuardRenderer, module_slot_slot
from fullgraph.runtime.sources import (
    ArgSource,
    AttrSource,
    CellSource,
    ConstSource,
    ContainsSource,
    GlobalHooksSource,
    HasAttrSource,
    HooksSource,
    IdSource,
    IndexSource,
    ItemSource,
    IterItemsSource,
    KeysSource,
    KwargSource,
    LenSource,
    LookupSource,
    RootFunctionSource,
    RootModuleSource,
    Source,
    TruthSource,
    TypeOfSource,
    has_path,
    module_hooks,
)

PARITY = os.environ.get("FULLGRAPH_GUARD_PARITY") == "1"  # the test suite sets it
DISABLED = os.environ.get("FULLGRAPH_NATIVE_GUARDS") == "0"
# Disagreements between the native tree and the Python guard seen in parity mode:
# the tree passing what Python refuses (a bug), and the tree refusing what it passes.
PARITY_FAILURES: list[str] = []
PARITY_STRICTER: list[str] = []

_ROOTS = {
    ArgSource: None,  # A[i] under the "A" entry
    KwargSource: None,
    RootModuleSource: "M",
    RootFunctionSource: "F",
}
_MODULE_PY = "torch_nn_modules_module"  # the frame key of torch.nn.modules.module


class NotNative(Exception):
    """A source or check the tree cannot express: it runs in the Python rest instead."""


class NativeGuard:
    """The guard a record runs: the native tree, then the Python rest (which returns inputs)."""

    def __init__(self, root: Any, constants: dict[str, Any], rest: Callable, native: int) -> None:
        self.root = root
        self.constants = constants
        self.rest = rest
        self.native_checks = native

    def __call__(self, A, K, M, F):
        frame = {"A": A, "K": K, "M": M, "F": F, **self.constants}
        state = torch._C._get_torch_function_state()
        try:
            passed = self.root.check(frame)
        except Exception:
            # The tree turns __torch_function__ off while it checks and, when a check
            # raises (a nested tensor has no strides), does not turn it back on: every
            # later torch call of the process would bypass modes and subclasses.
            torch._C._set_torch_function_state(state)
            raise
        if not passed:
            return None
        return self.rest(A, K, M, F)


class ParityGuard:
    """Parity mode: runs the native guard and the Python one, records any disagreement.

    The native tree passing a call the Python guard refuses would replay a record
    that does not apply: that is an error (raised, and kept in ``PARITY_FAILURES``).
    The tree refusing a call the Python guard passes is allowed, since tensor checks
    also compare dispatch keys (an inference tensor is not a normal one), and kept in
    ``PARITY_STRICTER``; the call then monitors again.
    """

    def __init__(self, native: NativeGuard, python: Callable, label: str) -> None:
        self.native, self.python, self.label = native, python, label
        self.native_checks = native.native_checks

    def __call__(self, A, K, M, F):
        expected = self.python(A, K, M, F)
        got = self.native(A, K, M, F)
        if got is None and expected is not None:
            PARITY_STRICTER.append(f"{self.label}: native guard failed, Python guard did not")
            return None
        same = (expected is None) == (got is None) and (
            expected is None or all(a is b for a, b in zip(expected, got, strict=True))
        )
        if not same:
            message = f"{self.label}: native guard passed, Python guard did not"
            if expected is not None:
                message = f"{self.label}: native and Python guards returned other inputs"
            PARITY_FAILURES.append(message)
            raise AssertionError(message)
        return expected


def prepare() -> None:
    """Import torch's guard managers now (``compile()`` calls this), not while the first
    record is built: the import keeps the frames it ran under alive (torch holds them),
    which in a monitored call are the program's frames and everything they hold."""
    if not DISABLED:
        try:
            import torch._dynamo.guards  # noqa: F401
        except Exception:  # noqa: BLE001, S110 - build_guard falls back to the Python guard
            pass


def build_guard(code: GuardCode, label: str) -> Callable:
    """The guard to run: native when torch's guard managers take every native check.

    The Python rendering is compiled only where it runs (no native tree, parity
    mode): compiling a large model's guard costs milliseconds of its first call.
    """
    if DISABLED:
        return python_guard(code, label)
    try:
        guard = _TreeBuilder(code).build(label)
    except Exception:  # noqa: BLE001 - an API this torch lacks: the Python guard is the same
        return python_guard(code, label)
    return ParityGuard(guard, python_guard(code, label), label) if PARITY else guard


def python_guard(code: GuardCode, label: str) -> Callable:
    """The Python rendering of the guard, compiled (what ``guard_source`` shows)."""
    return compile_source(code.source, code.namespace, "guard", f"<fullgraph guard {label}>")


class _TreeBuilder:
    def __init__(self, code: GuardCode) -> None:
        from torch._C._dynamo import guards
        from torch._dynamo.guards import GuardManagerType

        self.guards = guards
        self.code = code
        self.values = code.values
        self.root = guards.RootGuardManager()
        self.kind = GuardManagerType.GUARD_MANAGER
        self.managers: dict[Any, Any] = {}
        self.constants: dict[str, Any] = {}
        self.absent: set[tuple[int, str]] = set()  # (instance dict manager, name) checked

    def build(self, label: str) -> NativeGuard:
        rest: list[Check] = []
        native = 0
        for check in self.code.checks:
            try:
                self._add(check)
                native += 1
            except NotNative:
                rest.append(check)
        ns = Namespace()
        ns.values.update(self.code.namespace)
        source = GuardRenderer(ns, self.values).function("guard_rest", rest, self.code.inputs)
        rest_fn = compile_source(source, ns.values, "guard_rest", f"<fullgraph guard rest {label}>")
        return NativeGuard(self.root, self.constants, rest_fn, native)

    # -- checks -------------------------------------------------------------------------

    def _add(self, check: Check) -> None:
        leaf = check.leaf
        if leaf is not None and leaf.kind == "signature":
            self._signature(*leaf.value)
            return
        if leaf is not None and leaf.kind == "covered":
            return
        if leaf is not None and leaf.kind == "alias":
            first, second = (self.manager(source) for source in check.sources)
            self.guards.install_object_aliasing_guard(first, second, [check.why], None)
            return
        if len(check.sources) != 1:
            raise NotNative
        source = check.sources[0]
        parts = [check.why]
        if leaf is None:
            self._lambda_leaf(source, check)
        elif leaf.kind == "no_hooks":
            self._no_hooks(source, parts)
        elif leaf.kind == "id":
            self.manager(source).add_id_match_guard(id(leaf.value), parts, None)
        elif leaf.kind == "equals":
            self.manager(source).add_equals_match_guard(leaf.value, parts, None)
        elif leaf.kind == "type":
            self.manager(source).add_type_match_guard(id(leaf.value), parts, None)
        elif leaf.kind == "method":
            function = self._attr(self.manager(source), "__func__", source)
            function.add_id_match_guard(id(leaf.value), parts, None)
        elif leaf.kind == "tensor":
            self._tensor(source, leaf.value, leaf.dynamic, check)
        else:
            self._lambda_leaf(source, check)

    def _signature(self, arg_count: int, kwarg_names: tuple[str, ...]) -> None:
        why = ["call signature"]
        # A is always the call's tuple and K its dict: the length leaves cannot raise.
        self.manager(ArgSource(0), root_only=True).add_length_check_guard(arg_count, why, None)
        kwargs = self.manager(KwargSource(""), root_only=True)
        kwargs.add_dict_length_check_guard(len(kwarg_names), why, None)
        for name in kwarg_names:
            kwargs.add_dict_contains_guard(True, name, [f"keyword argument {name}"], None)

    def _no_hooks(self, source: Source, parts: list[str]) -> None:
        if isinstance(source, GlobalHooksSource):
            owner = self._constant(_MODULE_PY, torch.nn.modules.module)
            dicts = (
                "_global_forward_pre_hooks",
                "_global_forward_hooks",
                "_global_backward_pre_hooks",
                "_global_backward_hooks",
            )
        else:
            owner = self.manager(source.base)
            dicts = (
                "_forward_pre_hooks",
                "_forward_hooks",
                "_backward_pre_hooks",
                "_backward_hooks",
            )
        for name in dicts:
            # A dict-length leaf is False, not an error, on a value that is not a dict.
            self._attr(owner, name, source).add_dict_length_check_guard(0, parts, None)

    def _tensor(self, source: Source, meta: TensorMeta, dynamic: frozenset, check: Check):
        if meta.type.__torch_dispatch__ is not torch.Tensor.__torch_dispatch__:
            raise NotNative  # a wrapper subclass: its metadata lives in Python
        tensor = meta.live_example()
        if tensor is None or meta.strides is None:
            # torch's tensor-match leaf copies what it checks from an example tensor, and
            # the call changed this one's metadata (``x.squeeze_()``) since the run met it.
            self._lambda_leaf(source, check)
            return
        manager = self.manager(source)
        sizes = [None if d in dynamic else size for d, size in enumerate(meta.shape)]
        strides = (  # a size-1 dimension's stride is never used (record/guards.py)
            [None] * meta.dim()
            if dynamic
            else [
                None if size == 1 and not meta.strides_read else st
                for size, st in zip(meta.shape, meta.strides)
            ]
        )
        manager.add_tensor_match_guard(
            tensor,
            sizes,
            strides,
            source.expr(),
            [check.why],
            None,
            meta.type,
            torch._C._dispatch_keys(tensor),
        )
        if dynamic:  # the rest of the Python condition: the layout (contiguity)
            contiguous = meta.contiguous
            manager.add_lambda_guard(
                lambda t: t.is_contiguous() is contiguous, [check.why + " (layout)"], None
            )

    def _lambda_leaf(self, source: Source, check: Check) -> None:
        # ``v_``: generated-local names (v_...) are never a constant's (codegen.RESERVED).
        condition = check.render(["v_"])
        leaf = compile_source(
            f"def leaf(v_):\n    return {condition}\n",
            self.code.namespace,
            "leaf",
            "<fullgraph guard leaf>",
        )
        self.manager(source).add_lambda_guard(leaf, [check.why], None)

    # -- paths --------------------------------------------------------------------------

    def manager(self, source: Source, root_only: bool = False) -> Any:
        """The manager whose value is ``source``'s, made along the Python guard's path."""
        if isinstance(source, (ArgSource, KwargSource)):
            args = self._frame_entry("A" if isinstance(source, ArgSource) else "K")
            key = source.index if isinstance(source, ArgSource) else source.name
            return args if root_only else self._item(args, key, source)
        if isinstance(source, (RootModuleSource, RootFunctionSource)):
            return self._frame_entry(_ROOTS[type(source)])
        if isinstance(source, ConstSource):
            if source.name not in self.code.namespace:
                raise NotNative
            return self._constant(source.name, self.code.namespace[source.name])
        if isinstance(source, AttrSource):
            base = self.manager(source.base)
            slot = module_slot_slot(source, self.values.get(source.base))
            if slot is not None:  # m._modules['fc'], as the Python guard reads it
                return self._item(self._attr(base, slot, source.base), source.name, source)
            return self._attr(base, source.name, source)
        if isinstance(source, ItemSource):
            if has_path(source.key):  # ``d[g['K'].A]``: a key only Python can evaluate
                raise NotNative
            return self._item(self.manager(source.base), source.key, source)
        if isinstance(source, CellSource):
            closure = self._attr(self.manager(source.function), "__closure__", source)
            return self._attr(self._item(closure, source.index, source), "cell_contents", source)
        if isinstance(source, TypeOfSource):
            return self._type_of(source.base)
        if isinstance(source, LookupSource):
            found = self._lookup(source)
            if found is not None:
                return found
        computed = _computed(source)
        if computed is not None:
            return self._child(
                self.manager(source.base),
                ("lambda", source),
                lambda m: m.lambda_manager(computed, source.expr(), None, self.kind),
            )
        raise NotNative

    def _lookup(self, source: LookupSource) -> Any:
        """``base.name`` as attribute lookup finds it, natively: the instance's dict (read
        as lookup reads it, past any ``__getattribute__`` of the class) when the name was
        there, else the class's attribute, with "not in the instance's dict" checked.  A
        lambda otherwise (None).  Methods of every layer are looked up so: a Python
        callback each cost a few microseconds of every call on a transformer."""
        instance_dict = _instance_dict(self.values.get(source.base))
        if instance_dict is None:
            return None
        base = self.manager(source.base)
        where = source.base.expr()
        generic = self._child(
            base,
            ("instance dict",),
            lambda m: m.get_generic_dict_manager(f"{where}.__dict__", None, self.kind),
        )
        if source.name in instance_dict:
            return self._child(
                generic,
                ("dict item", source.name),
                lambda m: m.dict_getitem_manager(
                    source.name, f"{where}.__dict__[{source.name!r}]", None, self.kind
                ),
            )
        if (id(generic), source.name) not in self.absent:
            self.absent.add((id(generic), source.name))
            why = [f"{source.name!r} not in {where}.__dict__"]
            generic.add_dict_contains_guard(False, source.name, why, None)
        return self._attr(self._type_of(source.base), source.name, TypeOfSource(source.base))

    def _type_of(self, source: Source) -> Any:
        where = f"type({source.expr()})"
        return self._child(
            self.manager(source), ("type",), lambda m: m.type_manager(where, None, self.kind)
        )

    def _attr(self, parent: Any, name: str, source: Source) -> Any:
        return self._child(
            parent,
            ("attr", name),
            lambda m: m.getattr_manager(name, f"{source.expr()}:{name}", None, self.kind),
        )

    def _item(self, parent: Any, key: Any, source: Source) -> Any:
        return self._child(
            parent,
            ("item", type(key), key),
            lambda m: m.getitem_manager(key, f"{source.expr()}:{key!r}", None, self.kind),
        )

    def _child(self, parent: Any, step: tuple, make: Callable) -> Any:
        key = (id(parent), step)
        if key not in self.managers:
            self.managers[key] = (parent, make(parent))  # keep the parent alive with it
        return self.managers[key][1]

    def _frame_entry(self, name: str) -> Any:
        key = ("frame", name)
        if key not in self.managers:
            self.managers[key] = (None, self.root.dict_getitem_manager(name, name, None, self.kind))
        return self.managers[key][1]

    def _constant(self, name: str, value: Any) -> Any:
        self.constants[name] = value
        return self._frame_entry(name)


def _instance_dict(value: Any) -> dict | None:
    """``value``'s own attribute dict as lookup reads it (no ``__getattribute__`` runs)."""
    if value is None:
        return None
    try:
        found = object.__getattribute__(value, "__dict__")
    except (AttributeError, TypeError):
        return None
    return found if type(found) is dict else None


def _computed(source: Source) -> Callable | None:
    """How a computed source's value comes from its base's (``len``, ``in``, ...)."""
    if isinstance(source, LenSource):
        return len
    if isinstance(source, KeysSource):
        upto = source.upto
        return lambda base: tuple(base.keys())[:upto]
    if isinstance(source, ContainsSource):
        if has_path(source.key):
            return None
        key = source.key
        return lambda base: key in base
    if isinstance(source, HasAttrSource):
        name = source.name
        return lambda base: hasattr(base, name)
    if isinstance(source, HooksSource):
        return module_hooks
    if isinstance(source, LookupSource):
        name = source.name
        return lambda base: base.__dict__.get(name, getattr(type(base), name))
    if isinstance(source, IterItemsSource):
        return tuple
    if isinstance(source, IdSource):
        return id
    if isinstance(source, TruthSource):
        return bool  # (the base's type, checked first, is a builtin container's)
    if isinstance(source, IndexSource):
        return operator.index
    return None
