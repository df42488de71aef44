"""Proving that two expressions give tensors of identical metadata, for the torch.cond form.

``torch.cond`` needs both branches to return tensors of identical dtype, device,
layout, rank, sizes and stride order.  The source does not show metadata, so
this module proves equality symbolically: :class:`MetadataKeys` gives an
expression a *key*, a string such that equal keys mean equal metadata.

- A tensor from before the ``if`` is one object in both branches: its key is
  its name (or the key of its only definition).
- An operation's key is built from its callee and its arguments' keys
  (tensors by metadata, other arguments by value): the same operation on
  arguments of equal metadata gives results of equal metadata.  Two layers of
  the class built alike (:func:`class_layers`) count as the same callee.
- An operation known to keep its input's metadata (a table in
  :mod:`fullgraph.refactors.analyses.cond_facts`: ``relu``, ``tanh``, ``clone`` …, or
  arithmetic with a number on a floating-point tensor) has its input's key.

Anything else has no key (``None``), and the rule then refuses the fix.
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from ..analyses import cond_facts as facts
from ..analyses.tensor_kinds import Kind
from ..analyses.tensor_types import TensorTypes
from ..analyses.torch_facts import METADATA_ATTRIBUTES, METADATA_METHODS, TENSOR_ATTRIBUTES
from ..fast_tree import fast_visit
from .predication import names_in, torch_names

ARITHMETIC = {
    cst.Add: "add",
    cst.Subtract: "sub",
    cst.Multiply: "mul",
    cst.Divide: "div",
    cst.FloorDivide: "floordiv",
    cst.Modulo: "mod",
    cst.Power: "pow",
    cst.MatrixMultiply: "matmul",
    cst.BitAnd: "and",
    cst.BitOr: "or",
    cst.BitXor: "xor",
    cst.LeftShift: "lshift",
    cst.RightShift: "rshift",
}


def is_self_attribute(node: cst.BaseExpression) -> bool:
    return (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == "self"
    )


def reads(node: cst.BaseExpression) -> list[str]:
    """Variable names ``node`` reads, in order (not attribute names or keywords)."""
    found: list[str] = []

    class _Reads(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            found.append(name.value)

        def visit_Attribute(self, attribute: cst.Attribute) -> bool:
            fast_visit(attribute.value, self)
            return False

        def visit_Arg(self, arg: cst.Arg) -> bool:
            fast_visit(arg.value, self)
            return False

    fast_visit(node, _Reads())
    return found


# -- the layers of the class ----------------------------------------------------------


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


# -- equal metadata ---------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Fact:
    """What is known of a value a branch binds."""

    # Equal meta keys: tensors of equal metadata.  Equal value keys: equal values.
    meta: str | None
    value: str | None
    floating: bool
    # The result is a new tensor: it cannot be the input itself or a view of it.
    fresh: bool


class MetadataKeys:
    """Keys of expressions in one branch: equal keys prove equal metadata (or values).

    A tensor that existed before the ``if`` is one object in both branches, so
    its key is its name.  An operation's key is built from its callee and its
    arguments' keys (tensors by metadata, other arguments by value), except
    that an operation known to keep its input's metadata
    (:data:`~fullgraph.refactors.analyses.cond_facts.PRESERVING_FUNCTIONS` …, or
    arithmetic with a number on a floating-point tensor) has its input's key.
    So ``self.up(x)`` and ``torch.tanh(self.down(x)) * 2`` get one key when
    ``up`` and ``down`` are layers built alike.  ``None`` means unknown.
    """

    def __init__(
        self,
        types: TensorTypes,
        qualified_names,
        layers: dict[str, Layer],
        excluded: frozenset[int] = frozenset(),
        seen: frozenset[str] = frozenset(),
    ) -> None:
        self.types, self.qualified_names, self.layers = types, qualified_names, layers
        self.bound: dict[str, Fact] = {}
        # Assigned values (by id) of the `if` itself: the values a name held before it
        # are its other assignments (the branch results have the same key, once proven).
        self.excluded = excluded
        # Names whose definition is being expanded (a cycle has no key).
        self.seen = seen

    def bind(self, name: str, value: cst.BaseExpression) -> Fact:
        fact = Fact(self.meta(value), self.value(value), self.floating(value), self.fresh(value))
        self.bound[name] = fact
        return fact

    def fact(self, node: cst.BaseExpression) -> Fact:
        return Fact(self.meta(node), self.value(node), self.floating(node), self.fresh(node))

    def _tensor(self, node: cst.BaseExpression) -> bool:
        return self.types.is_tensor(node)

    # -- metadata --------------------------------------------------------------

    def meta(self, node: cst.BaseExpression) -> str | None:
        if isinstance(node, cst.Name):
            if node.value in self.bound:
                return self.bound[node.value].meta
            if not self._tensor(node):
                return None
            return self._definition_key(node.value) or f"<{node.value}>"
        if isinstance(node, cst.Attribute):
            if node.attr.value in TENSOR_ATTRIBUTES and self._tensor(node.value):
                return _join(f".{node.attr.value}", self.meta(node.value))
            return None
        if isinstance(node, cst.UnaryOperation):
            # -t, ~t and +t keep t's dtype whenever they succeed.
            return self.meta(node.expression) if self._tensor(node.expression) else None
        if isinstance(node, cst.BinaryOperation):
            return self._meta_binary(node)
        if isinstance(node, cst.Subscript):
            indices = [self._index_key(element.slice) for element in node.slice]
            if None in indices:
                return None
            return _join(f"[{', '.join(indices)}]", self.meta(node.value))
        if isinstance(node, cst.Call):
            return self._meta_call(node)
        return None

    def _definition_key(self, name: str) -> str | None:
        """The key of the one value a name from before the ``if`` can hold, if it has one.

        ``h = self.large(ids)`` before ``if c: h = self.small(ids)``: the old ``h``
        has the key of ``self.large(ids)`` when that is its only assignment and
        the locals it reads are parameters never rebound or such names in turn
        (so the key means the same wherever ``h`` is read).
        """
        values = [v for v in self.types.assigned.get(name, []) if id(v) not in self.excluded]
        if name in self.seen or name in self.types.parameters or len(values) != 1:
            return None
        if values[0] is None:
            return None
        outer = MetadataKeys(
            self.types, self.qualified_names, self.layers, self.excluded, self.seen | {name}
        )
        for read in set(reads(values[0])):
            if read in self.types.assigned and outer._definition_key(read) is None:
                return None
        return outer.meta(values[0])

    def _meta_binary(self, node: cst.BinaryOperation) -> str | None:
        operator = ARITHMETIC.get(type(node.operator))
        if operator is None:
            return None
        left, right = node.left, node.right
        left_tensor, right_tensor = self._tensor(left), self._tensor(right)
        if left_tensor and right_tensor:
            left_key, right_key = self.meta(left), self.meta(right)
            # Same metadata on both sides: an elementwise op keeps it (true division
            # keeps it for floating point only).
            same = left_key is not None and left_key == right_key
            if same and (
                operator in ("add", "sub", "mul") or (operator == "div" and self.floating(left))
            ):
                return left_key
            return _join(operator, left_key, right_key)
        if left_tensor or right_tensor:
            tensor, other = (left, right) if left_tensor else (right, left)
            # A Python number keeps a floating-point tensor's dtype (but `2 / t` runs in
            # float32 under autocast, and `**` is pow, which does too).
            if (
                _is_number(other)
                and self.floating(tensor)
                and (operator in ("add", "sub", "mul") or (operator == "div" and left_tensor))
            ):
                return self.meta(tensor)
            tensor_key, other_key = self.meta(tensor), self.value(other)
            keys = (tensor_key, other_key) if left_tensor else (other_key, tensor_key)
            return _join(operator, *keys)
        return None

    def _meta_call(self, node: cst.Call) -> str | None:
        callee = self._callee(node)
        if callee is None or any(arg.star for arg in node.args):
            return None
        kind, name, receiver = callee
        arguments = [a.value for a in node.args if a.keyword is None]
        if receiver is not None:
            arguments.insert(0, receiver)
        keywords = [(a.keyword.value, a.value) for a in node.args if a.keyword is not None]
        preserving = self._preserving(kind, name)
        if (
            preserving is not None
            and arguments
            and self._tensor(arguments[0])
            and not any(self.types.kind(a) is not Kind.NOT_TENSOR for a in arguments[1:])
            and not any(self.types.kind(v) is not Kind.NOT_TENSOR for _, v in keywords)
            and (preserving == facts.ANY or self.floating(arguments[0]))
        ):
            return self.meta(arguments[0])
        keys = [self._argument_key(a) for a in arguments]
        keys += [_join(f"{k}=", self._argument_key(v)) for k, v in keywords]
        return _join(f"{kind}:{name}", *keys)

    def _argument_key(self, node: cst.BaseExpression) -> str | None:
        return self.meta(node) if self._tensor(node) else self.value(node)

    def _index_key(self, index: cst.BaseSlice) -> str | None:
        if isinstance(index, cst.Slice):
            parts = [index.lower, index.upper, index.step]
            keys = ["" if p is None else self.value(p) for p in parts]
            return None if None in keys else ":".join(keys)
        if self.types.kind(index.value) is not Kind.NOT_TENSOR and not isinstance(
            index.value, (cst.Ellipsis, cst.BaseNumber)
        ):
            return None
        return self.value(index.value)

    def _callee(self, node: cst.Call) -> tuple[str, str, cst.BaseExpression | None] | None:
        """(kind, name, receiver) of the callee: a torch function, a tensor method or a layer."""
        func = node.func
        names = sorted(torch_names(self.qualified_names, func))
        if names:
            return "function", names[0], None
        if is_self_attribute(func):
            layer = self.layers.get(func.attr.value)
            if layer is None or layer.key is None:
                return None
            return "layer", layer.key, None
        if isinstance(func, cst.Attribute) and self._tensor(func.value):
            return "method", func.attr.value, func.value
        return None

    def _preserving(self, kind: str, name: str) -> str | None:
        if kind == "function":
            return facts.PRESERVING_FUNCTIONS.get(name)
        if kind == "method":
            return facts.PRESERVING_METHODS.get(name)
        return facts.PRESERVING_MODULES.get(name.split("(", 1)[0].split("@", 1)[0])

    # -- values ----------------------------------------------------------------

    def value(self, node: cst.BaseExpression) -> str | None:
        """A key for a non-tensor value: equal keys, equal values (None: unknown)."""
        if isinstance(node, (cst.BaseNumber, cst.SimpleString)):
            return f"{type(node).__name__}:{node.value}"
        if isinstance(node, cst.Ellipsis):
            return "..."
        if isinstance(node, cst.Name):
            if node.value in self.bound:
                return self.bound[node.value].value
            return f"<{node.value}>"
        if isinstance(node, cst.Attribute):
            if node.attr.value in METADATA_ATTRIBUTES and self._tensor(node.value):
                return _join(f"meta.{node.attr.value}", self.meta(node.value))
            return _join(f".{node.attr.value}", self.value(node.value))
        if isinstance(node, cst.UnaryOperation) and _is_number(node):
            return f"-{self.value(node.expression)}"
        if isinstance(node, (cst.Tuple, cst.List)):
            if any(isinstance(e, cst.StarredElement) for e in node.elements):
                return None
            return _join(type(node).__name__, *(self.value(e.value) for e in node.elements))
        if isinstance(node, cst.Subscript):
            indices = [self._index_key(element.slice) for element in node.slice]
            if None in indices:
                return None
            return _join(f"[{', '.join(indices)}]", self.value(node.value))
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in METADATA_METHODS
            and self._tensor(node.func.value)
            and not any(a.keyword or a.star for a in node.args)
        ):
            arguments = [self.value(a.value) for a in node.args]
            return _join(f"meta.{node.func.attr.value}", self.meta(node.func.value), *arguments)
        return None

    # -- dtype and freshness ---------------------------------------------------

    def floating(self, node: cst.BaseExpression, seen: frozenset[str] = frozenset()) -> bool:
        """Whether ``node`` is provably floating point (a tensor, or a Python float)."""
        if isinstance(node, cst.Float):
            return True
        if isinstance(node, cst.Name):
            if node.value in self.bound:
                return self.bound[node.value].floating
            if node.value in seen or node.value in self.types.parameters:
                return False
            # A value from before the `if`: floating when every assignment of it is.
            values = self.types.assigned.get(node.value, [])
            outer = MetadataKeys(self.types, self.qualified_names, self.layers, self.excluded)
            return bool(values) and all(
                v is not None and outer.floating(v, seen | {node.value}) for v in values
            )
        if isinstance(node, cst.UnaryOperation):
            return self.floating(node.expression, seen)
        if isinstance(node, cst.BinaryOperation):
            if isinstance(node.operator, cst.Divide):
                return True
            if type(node.operator) in ARITHMETIC:
                return self.floating(node.left, seen) or self.floating(node.right, seen)
            return False
        if isinstance(node, cst.Call):
            callee = self._callee(node)
            if callee is None:
                return False
            kind, name, receiver = callee
            if kind == "function" and name in facts.FLOATING_FUNCTIONS:
                return True
            if kind == "method" and name in facts.FLOATING_METHODS:
                return True
            if kind == "layer" and name.split("(", 1)[0].split("@", 1)[0] in facts.FLOATING_MODULES:
                return True
            argument = (
                receiver if receiver is not None else (node.args[0].value if node.args else None)
            )
            if argument is not None and self._preserving(kind, name) is not None:
                return self.floating(argument, seen)
        return False

    def fresh(self, node: cst.BaseExpression) -> bool:
        """Whether ``node`` is a new tensor, never its input or a view of it."""
        if isinstance(node, cst.Name):
            return node.value in self.bound and self.bound[node.value].fresh
        if isinstance(node, cst.BinaryOperation):
            return type(node.operator) in ARITHMETIC
        if isinstance(node, cst.UnaryOperation):
            return isinstance(node.operator, (cst.Minus, cst.BitInvert))
        if not isinstance(node, cst.Call):
            return False
        func = node.func
        if is_self_attribute(func):
            layer = self.layers.get(func.attr.value)
            return (
                layer is not None
                and layer.qualified_name in facts.COND_MODULES
                and layer.qualified_name not in facts.ALIASING_MODULES
            )
        names = torch_names(self.qualified_names, func)
        if names & facts.ALIASING_FUNCTIONS:
            return False
        if names & (facts.PRESERVING_FUNCTIONS.keys() | facts.FLOATING_FUNCTIONS):
            return True
        return (
            isinstance(func, cst.Attribute)
            and self._tensor(func.value)
            and func.attr.value in facts.PRESERVING_METHODS
        )


def _is_number(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        node = node.expression
    return isinstance(node, (cst.Integer, cst.Float))


def _join(head: str, *parts: str | None) -> str | None:
    if any(part is None for part in parts):
        return None
    return f"{head}({', '.join(parts)})"  # type: ignore[arg-type]
