"""The ``torch.nn`` layers a class builds, as the torch.cond form of FG101 needs them.

``self.proj = nn.Linear(4, 4)`` built once in the class gives a :class:`Layer`:
its qualified name, a key (two layers built alike have equal keys, so their
results have equal metadata for inputs of equal metadata), why torch.cond may
not call it, and whether it updates its input in place.  An attribute that a
subclass in the file assigns or changes, or that the class converts after
construction (``self.proj.half()``), is left out or has no key.
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from ..fast_tree import fast_visit
from . import cond_facts as facts
from .bindings import is_self_attribute, names_in
from .purity import torch_names


@dataclasses.dataclass(frozen=True)
class Layer:
    """A ``self.<attr>`` built once in the class from a ``torch.nn`` constructor."""

    qualified_name: str
    # Equal keys: equal result metadata for inputs of equal metadata (None: not known).
    key: str | None
    # Why torch.cond may not call it (None: it may).
    refusal: str | None
    # Built to update its input in place (`nn.ReLU(inplace=True)`): never run untaken.
    inplace: bool = False


def _root_attribute(node: cst.BaseExpression) -> str | None:
    """``attr`` when ``node`` is ``self.attr`` or an attribute/subscript chain on it."""
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        value = node.value
        if (
            isinstance(node, cst.Attribute)
            and isinstance(value, cst.Name)
            and value.value == "self"
        ):
            return node.attr.value
        node = value
    return None


def _stored_names(function: cst.FunctionDef) -> set[str]:
    names: set[str] = set()

    class _Stores(cst.CSTVisitor):
        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            if isinstance(node.target, (cst.Name, cst.Tuple, cst.List)):
                names.update(names_in(node.target))

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            names.update(names_in(node.target))

        def visit_For(self, node: cst.For) -> None:
            names.update(names_in(node.target))

    fast_visit(function.body, _Stores())
    return names


class _SelfAttributes(cst.CSTVisitor):
    """``self.<attr>`` assignments of one method, and the attributes it changes otherwise."""

    def __init__(self, method: cst.FunctionDef, assignments, modified: set[str]) -> None:
        super().__init__()
        self.method, self.assignments, self.modified = method, assignments, modified

    def _target(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._target(element.value, None)
        elif is_self_attribute(target):
            self.assignments.setdefault(target.attr.value, []).append((value, self.method))
        elif (root := _root_attribute(target)) is not None:
            self.modified.add(root)  # `self.proj.weight = …` changes the layer

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._target(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._target(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._target(node.target, None)

    def visit_Call(self, node: cst.Call) -> None:
        # `self.proj.half()` converts the layer's parameters after construction.
        func = node.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value in facts.CONVERTING_MODULE_METHODS
            and (root := _root_attribute(func.value)) is not None
        ):
            self.modified.add(root)


def _self_attributes(class_def: cst.ClassDef):
    assignments: dict[str, list[tuple[cst.BaseExpression | None, cst.FunctionDef]]] = {}
    modified: set[str] = set()
    for method in class_def.body.body:
        if isinstance(method, cst.FunctionDef):
            fast_visit(method.body, _SelfAttributes(method, assignments, modified))
    return assignments, modified


def class_layers(
    class_def: cst.ClassDef,
    qualified_names,
    code,
    subclasses: list[cst.ClassDef] = (),
    *,
    attributes: dict | None = None,
) -> dict[str, Layer]:
    """The layers of ``class_def`` (``self.proj = nn.Linear(4, 4)``) that a branch may call.

    An attribute a subclass (in ``subclasses``) assigns or changes may hold another
    layer when the method runs on the subclass: it is left out.  ``attributes``
    keeps each class's walk for the next call (a base class of many subclasses).
    """
    cache = attributes if attributes is not None else {}

    def self_attributes(node: cst.ClassDef):
        if node not in cache:
            cache[node] = _self_attributes(node)
        return cache[node]

    assignments, modified = self_attributes(class_def)
    overridden: set[str] = set()
    for subclass in subclasses:
        sub_assignments, sub_modified = self_attributes(subclass)
        overridden |= sub_assignments.keys() | sub_modified

    layers: dict[str, Layer] = {}
    for attribute, assigned in assignments.items():
        if attribute in overridden:
            continue
        if len(assigned) != 1 or not isinstance(assigned[0][0], cst.Call):
            continue
        call, method = assigned[0]
        names = sorted(
            n for n in torch_names(qualified_names, call.func) if n.startswith("torch.nn.")
        )
        if len(names) != 1:
            continue
        name = names[0]
        key = None if attribute in modified else _constructor_key(name, call, method, code)
        inplace = _inplace_argument(name, call) is not None
        layers[attribute] = Layer(name, key, _layer_refusal(name, call, code), inplace)
    return layers


def _layer_refusal(name: str, call: cst.Call, code) -> str | None:
    if name in facts.REFUSED_MODULES:
        return f"a `{name}`, which {facts.REFUSED_MODULES[name]}"
    if name not in facts.COND_MODULES:
        return f"a `{name}`, not a layer the rule knows torch.cond can run"
    argument = _inplace_argument(name, call)
    if argument is not None:
        keyword = facts.INPLACE_PARAMETERS[name][1]
        return (
            f"a `{name}` built with `{keyword}={code(argument)}`, which updates a tensor in place"
        )
    return None


def _inplace_argument(name: str, call: cst.Call) -> cst.BaseExpression | None:
    """The constructor argument that makes the layer update a tensor in place, if any."""
    if name not in facts.INPLACE_PARAMETERS:
        return None
    position, keyword = facts.INPLACE_PARAMETERS[name]
    argument = argument_of(call, position, keyword)
    if argument is None or (isinstance(argument, cst.Name) and argument.value in ("False", "None")):
        return None
    return argument


def argument_of(call: cst.Call, position: int, keyword: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[position].value if position < len(positional) else None


def _constructor_key(name: str, call: cst.Call, method: cst.FunctionDef, code) -> str | None:
    if any(arg.star for arg in call.args):
        return None
    rebound = _stored_names(method)
    read = set().union(*(names_in(arg.value) for arg in call.args)) - {"True", "False", "None"}
    if read & rebound:
        return None  # `nn.Linear(d, d)` with `d` rebound in between: the code is not the value
    parameters = facts.LAYER_PARAMETERS.get(name)
    arguments: list[tuple[str, str]] = []
    for index, arg in enumerate(a for a in call.args if a.keyword is None):
        if parameters is not None and index >= len(parameters):
            return None
        label = parameters[index] if parameters is not None else str(index)
        arguments.append((label, code(arg.value)))
    arguments += [(arg.keyword.value, code(arg.value)) for arg in call.args if arg.keyword]
    ignored = facts.METADATA_FREE_PARAMETERS.get(name, frozenset())
    kept = sorted((label, value) for label, value in arguments if label not in ignored)
    # Names in the arguments mean what they mean in the method that builds the layer.
    scope = f"@{method.name.value}" if read else ""
    return f"{name}{scope}({', '.join(f'{label}={value}' for label, value in kept)})"
