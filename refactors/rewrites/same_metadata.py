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
from ..analyses.bindings import is_self_attribute, reads
from ..analyses.layers import Layer
from ..analyses.purity import torch_names
from ..analyses.tensor_kinds import Kind
from ..analyses.tensor_types import TensorTypes
from ..analyses.torch_facts import METADATA_ATTRIBUTES, METADATA_METHODS, TENSOR_ATTRIBUTES

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
