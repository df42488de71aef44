"""Which functions of a file will run compiled ("compiled regions").

A function is compiled when it is an ``nn.Module.forward``, when it carries a
compile decorator (``torch.compile``, ``fullgraph.runtime.compile``, …), when
its qualified name is a configured entrypoint, or when one of those calls it
(by plain name or through ``self.``) — the call tree within the file.
Side effects are only a graph break inside such a region, so rules that are
about compilation use this to pick their severity.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping

import libcst as cst
from libcst.helpers import get_full_name_for_node

from ..fast_tree import fast_visit

COMPILE_DECORATORS = frozenset(
    {
        "torch.compile",
        "torch.jit.script",
        "torch.jit.trace",
        "torch._dynamo.optimize",
        "fullgraph.runtime.compile",
    }
)


def is_module_class(class_qualified_bases: set[str], local_module_classes: set[str]) -> bool:
    return any(
        base.startswith("torch.nn.") or base in local_module_classes
        for base in class_qualified_bases
    )


@dataclasses.dataclass
class FunctionInfo:
    node: cst.FunctionDef
    qualname: str
    class_name: str | None
    in_module_class: bool
    compile_decorated: bool
    # Why the function is compiled ("" when it is not).
    region_reason: str = ""
    # For methods: ``self.<attr>`` -> the torch.nn class it was built from (in this file).
    submodules: dict[str, str] = dataclasses.field(default_factory=dict)
    # The functions where compilation starts whose call tree holds this one.
    roots: list[cst.FunctionDef] = dataclasses.field(default_factory=list)
    # For methods: ``self.<name>`` the class registers as a tensor buffer.
    buffers: frozenset[str] = frozenset()
    # A method of a ``torch.autograd.Function`` (its ``backward`` runs in the autograd
    # engine, its values are often Python flags): the tensor rules leave it alone.
    in_autograd_function: bool = False
    # For methods: ``self.<attr>`` -> names of the file's functions assigned to it.
    function_attributes: dict[str, set[str]] = dataclasses.field(default_factory=dict)


class _Collector(cst.CSTVisitor):
    def __init__(self, qualified_names: Callable[[cst.CSTNode], set[str]]) -> None:
        super().__init__()
        self._qualified_names = qualified_names
        self.functions: dict[cst.FunctionDef, FunctionInfo] = {}
        self.module_classes: set[str] = set()
        self._classes: list[tuple[str, bool]] = []
        self._function_names: list[str] = []
        # function node -> names it calls (plain ``f(...)`` and ``self.f(...)``)
        self.calls: dict[cst.FunctionDef, set[str]] = {}
        self._current: list[cst.FunctionDef] = []
        # class name -> attribute -> qualified constructor names of each `self.attr = …`
        # (an empty set when the value is not a call).
        self.class_attributes: dict[str, dict[str, list[set[str]]]] = {}
        # class name -> attribute -> plain names of functions assigned to it
        # (``self.loss = some_function``, ``self.act = functools.partial(gelu, …)``).
        self.function_attributes: dict[str, dict[str, set[str]]] = {}
        # class name -> names registered with ``self.register_buffer("name", tensor)``
        self.buffers: dict[str, set[str]] = {}
        self.autograd_classes: set[str] = set()

    def _qualified(self, node: cst.CSTNode) -> set[str]:
        return self._qualified_names(node)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        bases: set[str] = set()
        for arg in node.bases:
            bases |= self._qualified(arg.value)
            plain = get_full_name_for_node(arg.value)
            if plain:
                bases.add(plain)
        is_module = is_module_class(bases, self.module_classes)
        if is_module:
            self.module_classes.add(node.name.value)
        if bases & {"torch.autograd.Function", "torch.autograd.function.Function"} or (
            bases & self.autograd_classes
        ):
            self.autograd_classes.add(node.name.value)
        self._classes.append((node.name.value, is_module))

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._classes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        class_name, in_module = self._classes[-1] if self._classes else (None, False)
        # A function nested in a method is not a method of the class.
        if self._current:
            class_name, in_module = None, False
        prefix = ".".join(self._function_names)
        qualname = f"{class_name}.{node.name.value}" if class_name else node.name.value
        if prefix:
            qualname = f"{prefix}.<locals>.{node.name.value}"
        decorated = False
        for decorator in node.decorators:
            target = decorator.decorator
            if isinstance(target, cst.Call):
                target = target.func
            if self._qualified(target) & COMPILE_DECORATORS:
                decorated = True
        self.functions[node] = FunctionInfo(
            node,
            qualname,
            class_name,
            in_module,
            decorated,
            in_autograd_function=class_name is not None and class_name in self.autograd_classes,
        )
        self.calls[node] = set()
        self._current.append(node)
        self._function_names.append(qualname)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._current.pop()
        self._function_names.pop()

    def visit_Assign(self, node: cst.Assign) -> None:
        if not self._current or not self._classes:
            return
        info = self.functions[self._current[-1]]
        if info.class_name is None:
            return
        for target in node.targets:
            attribute = target.target
            if (
                isinstance(attribute, cst.Attribute)
                and isinstance(attribute.value, cst.Name)
                and attribute.value.value == "self"
            ):
                constructors = (
                    self._qualified(node.value.func) if isinstance(node.value, cst.Call) else set()
                )
                attributes = self.class_attributes.setdefault(info.class_name, {})
                attributes.setdefault(attribute.attr.value, []).append(constructors)
                function = _function_reference(node.value, self._qualified)
                if function is not None:
                    functions = self.function_attributes.setdefault(info.class_name, {})
                    functions.setdefault(attribute.attr.value, set()).add(function)

    def visit_Call(self, node: cst.Call) -> None:
        if not self._current:
            return
        func = node.func
        class_name = self.functions[self._current[-1]].class_name
        if (
            class_name is not None
            and isinstance(func, cst.Attribute)
            and func.attr.value == "register_buffer"
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
            and len(node.args) >= 2
            and isinstance(node.args[0].value, cst.SimpleString)
            and not (
                isinstance(node.args[1].value, cst.Name) and node.args[1].value.value == "None"
            )
        ):
            name = node.args[0].value.evaluated_value
            if isinstance(name, str):
                self.buffers.setdefault(class_name, set()).add(name)
        if isinstance(func, cst.Name):
            self.calls[self._current[-1]].add(func.value)
        elif (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
        ):
            self.calls[self._current[-1]].add(func.attr.value)


def _function_reference(value: cst.BaseExpression, qualified) -> str | None:
    """The plain name of the function ``value`` refers to (``f``, ``functools.partial(f, …)``)."""
    if isinstance(value, cst.Name) and value.value not in ("None", "True", "False"):
        return value.value
    if (
        isinstance(value, cst.Call)
        and qualified(value.func) & {"functools.partial"}
        and value.args
        and isinstance(value.args[0].value, cst.Name)
    ):
        return value.args[0].value.value
    return None


def _buffers(registered: set[str], attributes: dict[str, list[set[str]]]) -> frozenset[str]:
    """Registered buffers that no plain assignment rebinds to something other than a tensor."""
    return frozenset(
        name
        for name in registered
        if all(
            any(n.startswith("torch.") and not n.startswith("torch.nn.") for n in constructors)
            for constructors in attributes.get(name, [])
        )
    )


def submodule_constructors(class_attributes: dict[str, list[set[str]]]) -> dict[str, str]:
    """Attributes assigned exactly once, from a ``torch.nn`` constructor -> its qualified name."""
    found = {}
    for attribute, assignments in class_attributes.items():
        if len(assignments) != 1:
            continue
        names = [n for n in assignments[0] if n.startswith("torch.nn.")]
        if len(names) == 1:
            found[attribute] = names[0]
    return found


def find_functions(
    module: cst.Module,
    qualified_names: Callable[[cst.CSTNode], set[str]],
    entrypoints: Collection[str] = (),
) -> dict[cst.FunctionDef, FunctionInfo]:
    """Every function of ``module``, with the reason it is compiled (if it is)."""
    collector = _Collector(qualified_names)
    fast_visit(module, collector)
    functions = collector.functions
    for info in functions.values():
        if info.class_name is not None:
            attributes = collector.class_attributes.get(info.class_name, {})
            info.submodules = submodule_constructors(attributes)
            info.buffers = _buffers(collector.buffers.get(info.class_name, set()), attributes)
            info.function_attributes = collector.function_attributes.get(info.class_name, {})
    pending = []
    for info in functions.values():
        if info.compile_decorated:
            info.region_reason = "it is decorated for compilation"
        elif info.in_module_class and info.node.name.value == "forward":
            info.region_reason = f"it is the forward of the nn.Module {info.class_name}"
        elif info.qualname in entrypoints or info.node.name.value in entrypoints:
            # A mapping names why (workspace.py: called from a compiled function elsewhere).
            reason = None
            if isinstance(entrypoints, Mapping):
                reason = entrypoints.get(info.qualname) or entrypoints.get(info.node.name.value)
            info.region_reason = reason or "it is a configured entrypoint"
        if info.region_reason:
            info.roots.append(info.node)
            pending.append(info)
    by_name: dict[str, list[FunctionInfo]] = {}
    for info in functions.values():
        by_name.setdefault(info.node.name.value, []).append(info)
    # Spread the region through the call tree inside this file.
    while pending:
        caller = pending.pop()
        if caller.in_autograd_function:
            continue  # its backward is no part of the forward graph
        for callee in _callees(caller, collector, by_name):
            new_roots = [root for root in caller.roots if root not in callee.roots]
            if not new_roots:
                continue
            if not callee.region_reason:
                callee.region_reason = f"it is called from {caller.qualname}, which is compiled"
            callee.roots.extend(new_roots)
            pending.append(callee)
    return functions


def _callees(
    caller: FunctionInfo, collector: _Collector, by_name: dict[str, list[FunctionInfo]]
) -> list[FunctionInfo]:
    """The functions of this file that ``caller`` calls, by name, ``self.`` or an attribute."""
    attributes = collector.function_attributes.get(caller.class_name or "", {})
    found = []
    for name in collector.calls[caller.node]:
        for callee in by_name.get(name, []):
            if callee.class_name is None or callee.class_name == caller.class_name:
                found.append(callee)
        # ``self.loss(...)`` where ``__init__`` set ``self.loss = some_function``.
        for function in attributes.get(name, ()):
            found.extend(c for c in by_name.get(function, []) if c.class_name is None)
    return found
