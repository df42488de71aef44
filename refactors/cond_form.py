"""The ``torch.cond`` form of predicated control flow: run only the taken branch.

When a branch calls something that could fault or have an effect if it ran
untaken (an embedding lookup with an index in range for one table only,
dropout's random numbers, a linear-algebra op on a singular matrix), the
``torch.where`` form (:mod:`fullgraph.refactors.predication`) cannot hoist it.
``torch.cond`` runs one branch, so those are fine; its own contract (torch
2.13, ``torch/_higher_order_ops/cond.py``) is what this module proves:

- the predicate is a one-element ``torch.bool`` tensor;
- each branch becomes a function of the *operands*, the local tensors the
  branch reads (``self``, numbers and globals are closed over); it returns
  the names live after the ``if`` (a tuple when several), or the value both
  branches return;
- both branches return tensors of identical metadata (dtype, device, layout,
  rank, sizes, stride order) — proven by :class:`MetadataKeys`, from facts in
  :mod:`fullgraph.refactors.cond_facts`;
- a result must not alias an input (``return x`` is rejected; ``x.clone()``
  is returned instead);
- nothing in a branch mutates an input or a buffer, has a Python side effect
  or breaks the graph: ``torch.cond`` compiles both branches with Dynamo,
  whole-graph, even in eager mode, so a violation raises rather than running
  differently; the checks keep such branches out.

Every failed condition raises :class:`~fullgraph.refactors.predication.Refusal`
with the reason in words.
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from . import cond_facts as facts
from .predication import RETURN, Branch, Refusal, fresh_names, is_single_value, names_in
from .tensor_types import Kind, TensorTypes
from .torch_facts import (
    DATA_DEPENDENT_BOOL_TORCH,
    METADATA_ATTRIBUTES,
    METADATA_METHODS,
    TENSOR_ATTRIBUTES,
)

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
BOOLEAN_REDUCTIONS = frozenset({"any", "all"})


# -- the layers of the class ----------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Layer:
    """A ``self.<attr>`` built once in the class from a ``torch.nn`` constructor."""

    qualified_name: str
    # Equal keys: equal result metadata for inputs of equal metadata (None: not known).
    key: str | None
    # Why torch.cond may not call it (None: it may).
    refusal: str | None


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

    function.body.visit(_Stores())
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
        elif _is_self_attribute(target):
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


def class_layers(class_def: cst.ClassDef, qualified_names, code) -> dict[str, Layer]:
    """The layers of ``class_def`` (``self.proj = nn.Linear(4, 4)``) that a branch may call."""
    assignments: dict[str, list[tuple[cst.BaseExpression | None, cst.FunctionDef]]] = {}
    modified: set[str] = set()
    for method in class_def.body.body:
        if isinstance(method, cst.FunctionDef):
            method.body.visit(_SelfAttributes(method, assignments, modified))

    layers: dict[str, Layer] = {}
    for attribute, assigned in assignments.items():
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
        layers[attribute] = Layer(name, key, _layer_refusal(name, call, code))
    return layers


def _layer_refusal(name: str, call: cst.Call, code) -> str | None:
    if name in facts.REFUSED_MODULES:
        return f"a `{name}`, which {facts.REFUSED_MODULES[name]}"
    if name not in facts.COND_MODULES:
        return f"a `{name}`, not a layer the rule knows torch.cond can run"
    if name in facts.INPLACE_PARAMETERS:
        position, keyword = facts.INPLACE_PARAMETERS[name]
        argument = _argument(call, position, keyword)
        if argument is not None and not (
            isinstance(argument, cst.Name) and argument.value in ("False", "None")
        ):
            return f"a `{name}` built with `{keyword}={code(argument)}`, which updates a tensor in place"
    return None


def _argument(call: cst.Call, position: int, keyword: str) -> cst.BaseExpression | None:
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


# -- what a branch may contain ----------------------------------------------------------


class _Checker:
    """Refuses branch code that torch.cond cannot compile or that has an effect it drops."""

    def __init__(self, types: TensorTypes, qualified_names, code, layers) -> None:
        self.types, self.qualified_names, self.code, self.layers = (
            types,
            qualified_names,
            code,
            layers,
        )

    def check(self, node: cst.BaseExpression) -> None:
        code = self.code
        if isinstance(node, (cst.Name, cst.BaseNumber, cst.SimpleString, cst.Ellipsis)):
            return
        if isinstance(node, cst.Attribute):
            self.check(node.value)
        elif isinstance(node, cst.BinaryOperation):
            # Division by zero or a shape mismatch faults only in the branch that runs.
            self.check(node.left)
            self.check(node.right)
        elif isinstance(node, cst.UnaryOperation):
            if isinstance(node.operator, cst.Not):
                raise Refusal(f"`{code(node)}` reads a tensor's value (a graph break)")
            self.check(node.expression)
        elif isinstance(node, cst.Comparison):
            if any(isinstance(c.operator, (cst.In, cst.NotIn)) for c in node.comparisons):
                raise Refusal(f"`{code(node)}` reads a tensor's values (a graph break)")
            self.check(node.left)
            for comparison in node.comparisons:
                self.check(comparison.comparator)
        elif isinstance(node, (cst.Tuple, cst.List)):
            for element in node.elements:
                self.check(element.value)
        elif isinstance(node, cst.Subscript):
            self._check_subscript(node)
        elif isinstance(node, cst.Call):
            self._check_call(node)
        else:
            raise Refusal(f"`{code(node)}` is not an expression the rule can check for torch.cond")

    def _check_subscript(self, node: cst.Subscript) -> None:
        self.check(node.value)
        for element in node.slice:
            index = element.slice
            parts = (
                [index.lower, index.upper, index.step]
                if isinstance(index, cst.Slice)
                else [index.value]
            )
            for part in parts:
                if part is None:
                    continue
                if self.types.kind(part) is not Kind.NOT_TENSOR and not isinstance(
                    part, (cst.Ellipsis, cst.BaseNumber)
                ):
                    raise Refusal(
                        f"`{self.code(node)}` indexes with a value that may be a tensor (a "
                        "boolean mask gives a shape that depends on data)"
                    )
                self.check(part)

    def _check_call(self, node: cst.Call) -> None:
        code, func = self.code, node.func
        names = torch_names(self.qualified_names, func)
        if names:
            self._check_torch_call(node, names)
        elif _is_self_attribute(func):
            layer = self.layers.get(func.attr.value)
            if layer is None:
                raise Refusal(
                    f"`{code(func)}` is called, and it is not a torch.nn layer built in this "
                    "class, so the rule cannot prove it free of effects and graph breaks"
                )
            if layer.refusal is not None:
                raise Refusal(f"`{code(func)}` is {layer.refusal}")
        elif isinstance(func, cst.Attribute) and self.types.is_tensor(func.value):
            method = func.attr.value
            if method.endswith("_") and not method.endswith("__"):
                raise Refusal(f"`{code(node)}` updates a tensor in place")
            if method in facts.FORBIDDEN_METHODS:
                raise Refusal(f"`{code(node)}` reads the tensor's value or has an effect")
            if method in facts.DATA_DEPENDENT_SHAPE_METHODS:
                raise Refusal(f"`{code(node)}` has a shape that depends on data")
            self.check(func.value)
        else:
            raise Refusal(
                f"`{code(func)}` is called, and the rule cannot prove it free of Python side "
                "effects and graph breaks"
            )
        for arg in node.args:
            if arg.star:
                raise Refusal(f"`{code(node)}` unpacks arguments with `{arg.star}`")
            self.check(arg.value)

    def _check_torch_call(self, node: cst.Call, torch_names: set[str]) -> None:
        code = self.code
        if torch_names & facts.OUTSIDE_EFFECT_FUNCTIONS:
            raise Refusal(f"`{code(node)}` has an effect outside the graph")
        if torch_names & DATA_DEPENDENT_BOOL_TORCH:
            raise Refusal(f"`{code(node)}` reads tensor data into Python (a graph break)")
        if torch_names & facts.DATA_DEPENDENT_SHAPE_FUNCTIONS:
            raise Refusal(f"`{code(node)}` has a shape that depends on data")
        if any(n.rsplit(".", 1)[-1].endswith("_") for n in torch_names):
            raise Refusal(f"`{code(node)}` updates a tensor in place")
        if any(
            n.startswith("torch.nn.") and not n.startswith("torch.nn.functional.")
            for n in torch_names
        ):
            raise Refusal(f"`{code(node)}` builds a module")
        for name in torch_names & facts.INPLACE_FUNCTION_PARAMETERS.keys():
            argument = _argument(node, facts.INPLACE_FUNCTION_PARAMETERS[name], "inplace")
            if argument is not None and not (
                isinstance(argument, cst.Name) and argument.value == "False"
            ):
                raise Refusal(f"`{code(node)}` updates a tensor in place")


def torch_names(qualified_names, func: cst.BaseExpression) -> set[str]:
    """The ``torch.*`` names ``func`` refers to, when it is a dotted name.

    Qualified names of ``torch.tanh(x).neg`` come out as ``torch.tanh.neg``: a
    callee that is a method of a call's result is not a torch function.
    """
    node = func
    while isinstance(node, cst.Attribute):
        node = node.value
    if not isinstance(node, cst.Name):
        return set()
    return {n for n in qualified_names(func) if n.startswith("torch.")}


def _is_self_attribute(node: cst.BaseExpression) -> bool:
    return (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == "self"
    )


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
    (:data:`~fullgraph.refactors.cond_facts.PRESERVING_FUNCTIONS` …, or
    arithmetic with a number on a floating-point tensor) has its input's key.
    So ``self.up(x)`` and ``torch.tanh(self.down(x)) * 2`` get one key when
    ``up`` and ``down`` are layers built alike.  ``None`` means unknown.
    """

    def __init__(self, types: TensorTypes, qualified_names, layers: dict[str, Layer]) -> None:
        self.types, self.qualified_names, self.layers = types, qualified_names, layers
        self.bound: dict[str, Fact] = {}

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
            return f"<{node.value}>" if self._tensor(node) else None
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
        if _is_self_attribute(func):
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
            outer = MetadataKeys(self.types, self.qualified_names, self.layers)
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
        if _is_self_attribute(func):
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


# -- the plan ---------------------------------------------------------------------------


def is_boolean(node: cst.BaseExpression, types: TensorTypes, qualified_names) -> bool:
    """Whether ``node`` is provably a ``torch.bool`` tensor (torch.cond's predicate)."""
    if isinstance(node, cst.Comparison):
        return len(node.comparisons) == 1 and not isinstance(
            node.comparisons[0].operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)
        )
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in BOOLEAN_REDUCTIONS:
            return not node.args and types.is_tensor(func.value)
        return bool(torch_names(qualified_names, func) & {"torch.any", "torch.all"}) and (
            len(node.args) == 1
        )
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.BitInvert):
        return is_boolean(node.expression, types, qualified_names)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.BitAnd, cst.BitOr)):
        return is_boolean(node.left, types, qualified_names) and is_boolean(
            node.right, types, qualified_names
        )
    return False


@dataclasses.dataclass
class CondPlan:
    """``targets = torch.cond(condition, true_name, false_name, (operands…))`` and the two defs."""

    condition: str
    operands: list[str]
    targets: list[str]  # names, or [RETURN]
    true_name: str
    false_name: str
    # Each branch function's body (its kept lines, ending with the return) and the
    # expression it returns (the whole body of a lambda, for a conditional expression).
    true_body: list[cst.SimpleStatementLine]
    false_body: list[cst.SimpleStatementLine]
    true_result: cst.BaseExpression
    false_result: cst.BaseExpression
    # Targets that now hold a copy where the original bound an existing tensor.
    copied: set[str]

    def _call(self, torch: str, true_fn: str, false_fn: str) -> str:
        operands = ", ".join(self.operands) + ("," if len(self.operands) == 1 else "")
        return f"{torch}.cond({self.condition}, {true_fn}, {false_fn}, ({operands}))"

    def statements(self, torch: str) -> list[cst.BaseStatement]:
        """The two branch functions and the statement that calls torch.cond."""
        params = cst.Parameters(params=[cst.Param(cst.Name(name)) for name in self.operands])
        defs = [
            cst.FunctionDef(name=cst.Name(name), params=params, body=cst.IndentedBlock(body=body))
            for name, body in ((self.true_name, self.true_body), (self.false_name, self.false_body))
        ]
        call = self._call(torch, self.true_name, self.false_name)
        if self.targets == [RETURN]:
            line = f"return {call}"
        else:
            line = f"{', '.join(self.targets)} = {call}"
        return [*defs, cst.parse_statement(line + "\n")]

    def expression(self, torch: str, code) -> cst.BaseExpression:
        """The torch.cond call with lambdas, for a conditional expression."""
        params = ", ".join(self.operands)
        head = f"lambda {params}: " if params else "lambda: "
        true_fn, false_fn = head + code(self.true_result), head + code(self.false_result)
        return cst.parse_expression(self._call(torch, true_fn, false_fn))


def _copy(node: cst.BaseExpression) -> cst.BaseExpression:
    if not isinstance(node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
        node = node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.Call(func=cst.Attribute(value=node, attr=cst.Name("clone")))


def _reads(node: cst.BaseExpression) -> list[str]:
    """Variable names ``node`` reads, in order (not attribute names or keywords)."""
    found: list[str] = []

    class _Reads(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            found.append(name.value)

        def visit_Attribute(self, attribute: cst.Attribute) -> bool:
            attribute.value.visit(self)
            return False

        def visit_Arg(self, arg: cst.Arg) -> bool:
            arg.value.visit(self)
            return False

    node.visit(_Reads())
    return found


def plan_cond(
    condition: cst.BaseExpression,
    then: Branch,
    otherwise: Branch | None,
    *,
    types: TensorTypes,
    qualified_names,
    code,
    live: set[str],
    defined_before: set[str],
    taken_names: set[str],
    layers: dict[str, Layer],
) -> CondPlan:
    """Check every condition of the torch.cond form and lay it out (or raise :class:`Refusal`)."""
    if not types.is_tensor(condition) or not is_single_value(condition, types, qualified_names):
        raise Refusal(f"the condition `{code(condition)}` is not provably a one-element tensor")
    if not is_boolean(condition, types, qualified_names):
        raise Refusal(
            f"the condition `{code(condition)}` is not provably a boolean tensor (torch.cond "
            "needs a torch.bool predicate; write a comparison)"
        )
    otherwise = otherwise or Branch([])
    if then.returns != otherwise.returns:
        raise Refusal("only one branch returns; the other path continues after the `if`")
    checker = _Checker(types, qualified_names, code, layers)
    for label, branch in (("true", then), ("false", otherwise)):
        for _, value in branch.assignments:
            try:
                checker.check(value)
            except Refusal as refusal:
                raise Refusal(f"the {label} branch cannot run in torch.cond: {refusal}") from None
            if any(isinstance(n, cst.NamedExpr) for n in _walk(value)):
                raise Refusal(f"the {label} branch binds a name with `:=`")

    targets = _targets(then, otherwise, live, defined_before)
    keys = [MetadataKeys(types, qualified_names, layers) for _ in range(2)]
    # Reads of each branch before its own binding: they come from outside the branch.
    outside_reads: list[str] = []
    rebound_reads: set[str] = set()
    for branch, branch_keys in zip((then, otherwise), keys):
        bound: set[str] = set()
        for target, value in branch.assignments:
            for name in _reads(value):
                if name not in bound:
                    outside_reads.append(name)
                    if name in branch.names:
                        rebound_reads.add(name)
            if target != RETURN:
                branch_keys.bind(target, value)
                bound.add(target)

    results: list[tuple[cst.BaseExpression, cst.BaseExpression]] = []
    copied: set[str] = set()
    for target in targets:
        pair = []
        facts_pair = []
        for branch, branch_keys in zip((then, otherwise), keys):
            values = [v for t, v in branch.assignments if t == target]
            value = values[-1] if values else cst.Name(target)
            if not values:
                outside_reads.append(target)
            label = "the returned value" if target == RETURN else f"`{target}`"
            if not types.is_tensor(value if target == RETURN else cst.Name(target)):
                raise Refusal(f"{label} is not known to be a tensor in both branches")
            fact = (
                branch_keys.fact(value)
                if target == RETURN
                else (branch_keys.bound.get(target) or branch_keys.fact(value))
            )
            facts_pair.append((value, fact))
            result = value if target == RETURN else cst.Name(target)
            if not fact.fresh:
                result = _copy(result)
                if target != RETURN:
                    copied.add(target)
            pair.append(result)
        (true_value, true_fact), (false_value, false_fact) = facts_pair
        if true_fact.meta is None or true_fact.meta != false_fact.meta:
            label = "the returned values" if target == RETURN else f"the values of `{target}`"
            raise Refusal(
                f"{label} (`{code(true_value)}` and `{code(false_value)}`) are not provably of "
                "identical shape, dtype and layout, which torch.cond needs of both branches"
            )
        results.append((pair[0], pair[1]))

    locals_ = set(types.env) | set(types.parameters)
    operands: list[str] = []
    for name in dict.fromkeys(outside_reads):
        if name not in locals_:
            continue  # a global or builtin: the branch function reads it the same way
        if types.is_tensor(cst.Name(name)):
            operands.append(name)
        elif name in rebound_reads:
            raise Refusal(
                f"`{name}` is read and then rebound in a branch, and it is not a tensor that "
                "can be passed to torch.cond as an operand"
            )
    fresh = fresh_names(taken_names)
    true_name, false_name = fresh("true_branch"), fresh("false_branch")
    bodies = []
    for index, branch in enumerate((then, otherwise)):
        values = [pair[index] for pair in results]
        result = (
            values[0]
            if len(values) == 1
            else cst.Tuple(elements=[cst.Element(v) for v in values], lpar=[], rpar=[])
        )
        bodies.append(_body(branch, result, targets))
    (true_body, true_result), (false_body, false_result) = bodies
    return CondPlan(
        code(condition),
        operands,
        targets,
        true_name,
        false_name,
        true_body,
        false_body,
        true_result,
        false_result,
        copied,
    )


def _walk(node: cst.CSTNode):
    found: list[cst.CSTNode] = []

    class _All(cst.CSTVisitor):
        def on_visit(self, inner: cst.CSTNode) -> bool:
            found.append(inner)
            return True

    node.visit(_All())
    return found


def _targets(then: Branch, otherwise: Branch, live: set[str], defined_before: set[str]):
    if then.returns:
        return [RETURN]
    targets = []
    true_names, false_names = set(then.names), set(otherwise.names)
    for name in dict.fromkeys([*then.names, *otherwise.names]):
        both = name in true_names and name in false_names
        if name not in live:
            continue  # a temporary of the branches: local to the branch function
        if not both and name not in defined_before:
            side = "true" if name in true_names else "false"
            raise Refusal(
                f"`{name}` is bound only when the condition is {side}; both branches must "
                "bind the same names"
            )
        targets.append(name)
    if not targets:
        raise Refusal("no value the branches compute is used after the `if`")
    return targets


def _body(branch: Branch, result: cst.BaseExpression, targets: list[str]):
    """A branch function's body: the branch's lines, then ``return result``."""
    lines = [line for line in branch.lines if not all(isinstance(s, cst.Pass) for s in line.body)]
    if targets == [RETURN]:
        if not lines:  # a conditional expression: nothing but the value
            return [cst.SimpleStatementLine(body=[cst.Return(result)])], result
        # The `return` line keeps its comments; only its value may become a copy.
        last = lines[-1]
        returned = last.body[-1].with_changes(value=result)
        return [*lines[:-1], last.with_changes(body=[*last.body[:-1], returned])], result
    if (
        len(targets) == 1
        and len(lines) == 1
        and len(lines[0].body) == 1
        and isinstance(lines[0].body[0], (cst.Assign, cst.AnnAssign))
        and len(branch.assignments) == 1
        and branch.assignments[0][0] == targets[0]
    ):
        # `h = self.up(x)` alone: the function returns the value, keeping the line's comments.
        value = branch.assignments[0][1]
        inlined = _copy(value) if isinstance(result, cst.Call) else value
        return [lines[0].with_changes(body=[cst.Return(inlined)])], inlined
    return [*lines, cst.SimpleStatementLine(body=[cst.Return(result)])], result
