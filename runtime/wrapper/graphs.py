"""A generated graph class back into the fx graph it spells out, node for node.

The generated compiled wrapper writes each recorded graph as a class whose
``forward`` is the fx code of the graph.  To compile it in a fresh process the
graph is needed again.  Tracing the class with ``torch.fx.symbolic_trace``
is not the same graph: tracing *runs* every call whose arguments hold no
tensor (``torch.zeros(3)``, ``torch.rand(())`` and
``torch._C._set_grad_enabled(False)`` would be executed once and baked into
the graph as constants, the grad mode switch lost) and fails on helpers that
reject a Proxy (``Tensor.__getitem__``).  So the forward's source is read
instead: each statement fx's code generator writes is one node, and
``graph_from_class`` makes that node again, without running anything.

``graph_difference`` compares two graphs node for node; the wrapper generator
uses it to refuse a module whose classes would not rebuild the record's graphs.
"""

from __future__ import annotations

import ast
import inspect
import operator
import textwrap
from typing import Any

import torch
import torch.fx

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Div: operator.truediv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
    ast.MatMult: operator.matmul,
}
_INPLACE = {
    ast.Add: operator.iadd,
    ast.Sub: operator.isub,
    ast.Mult: operator.imul,
    ast.FloorDiv: operator.ifloordiv,
    ast.Div: operator.itruediv,
    ast.Mod: operator.imod,
    ast.Pow: operator.ipow,
    ast.LShift: operator.ilshift,
    ast.RShift: operator.irshift,
    ast.BitAnd: operator.iand,
    ast.BitOr: operator.ior,
    ast.BitXor: operator.ixor,
    ast.MatMult: operator.imatmul,
}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg, ast.Invert: operator.invert}
_COMPARE = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.Gt: operator.gt,
    ast.LtE: operator.le,
    ast.GtE: operator.ge,
}


class GraphSourceError(ValueError):
    """A statement that fx's code generator does not write."""


def graph_from_class(graph_class: type[torch.nn.Module]) -> torch.fx.GraphModule:
    """The GraphModule that ``graph_class().forward`` spells out (its subgraph
    attributes, such as a torch.cond's branches, rebuilt the same way)."""
    root = graph_class()
    for name, child in list(root.named_children()):
        setattr(root, name, graph_from_class(type(child)))
    forward = graph_class.forward
    source = textwrap.dedent(inspect.getsource(forward))
    graph = _Builder(forward.__globals__).build(source)
    return torch.fx.GraphModule(root, graph, class_name=graph_class.__name__)


class _Builder:
    def __init__(self, namespace: dict[str, Any]):
        self.namespace = namespace
        self.graph = torch.fx.Graph()
        self.env: dict[str, torch.fx.Node] = {}
        self.pending: torch.fx.Node | None = None  # an in-place node: "a += b;  iadd = a"

    def build(self, source: str) -> torch.fx.Graph:
        (function,) = ast.parse(source).body
        if not isinstance(function, ast.FunctionDef):
            raise GraphSourceError("expected the forward method")
        self._placeholders(function.args)
        for statement in function.body:
            self._statement(statement)
        return self.graph

    def _placeholders(self, arguments: ast.arguments) -> None:
        params = [*arguments.posonlyargs, *arguments.args][1:]  # self
        defaults = [None] * (len(params) - len(arguments.defaults)) + list(arguments.defaults)
        for param, default in zip(params, defaults):
            if default is None:
                node = self.graph.placeholder(param.arg)
            else:
                node = self.graph.placeholder(param.arg, default_value=self._value(default))
            self.env[param.arg] = node
        if arguments.vararg is not None:
            name = arguments.vararg.arg
            self.env[name] = self.graph.placeholder("*" + name)
        if arguments.kwonlyargs or arguments.kwarg:
            raise GraphSourceError("keyword-only graph inputs")

    def _statement(self, statement: ast.stmt) -> None:
        pending, self.pending = self.pending, None
        if isinstance(statement, ast.Return):
            value = self._value(statement.value) if statement.value is not None else None
            self.graph.output(value)
        elif isinstance(statement, ast.Pass):
            pass
        elif isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            if len(targets) != 1:
                raise GraphSourceError(ast.unparse(statement))
            (target,) = targets
            if isinstance(target, ast.Subscript):  # setitem: "a[b] = c;  setitem = a"
                args = (self._value(target.value), self._value(target.slice))
                self.pending = self._node(
                    "call_function", operator.setitem, (*args, self._value(statement.value))
                )
            elif isinstance(target, ast.Name):
                self.env[target.id] = self._expression(target.id, statement.value, pending)
            else:
                raise GraphSourceError(ast.unparse(statement))
        elif isinstance(statement, ast.AugAssign):
            function = _INPLACE[type(statement.op)]
            args = (self._value(statement.target), self._value(statement.value))
            self.pending = self._node("call_function", function, args)
        else:
            raise GraphSourceError(ast.unparse(statement))

    def _expression(
        self, name: str, expr: ast.expr, pending: torch.fx.Node | None
    ) -> torch.fx.Node:
        """The node fx wrote as ``name = expr``."""
        if isinstance(expr, ast.Name) and expr.id in self.env:
            if pending is not None:  # the name of the in-place node just made
                return pending
            return self.env[expr.id]  # a placeholder's other name: "x_1 = x"
        if isinstance(expr, ast.Call) and not any(isinstance(a, ast.Starred) for a in expr.args):
            args = tuple(self._value(a) for a in expr.args)
            kwargs = {k.arg: self._value(k.value) for k in expr.keywords if k.arg is not None}
            if len(kwargs) != len(expr.keywords):
                raise GraphSourceError(ast.unparse(expr))
            func = expr.func
            module_path = _self_path(func)
            if module_path is not None:
                return self._node("call_module", module_path, args, kwargs, name)
            if isinstance(func, ast.Attribute) and self._is_node(func.value):
                receiver = self._value(func.value)
                return self._node("call_method", func.attr, (receiver, *args), kwargs, name)
            return self._node("call_function", self._value(func), args, kwargs, name)
        if isinstance(expr, ast.Attribute):
            attribute_path = _self_path(expr)
            if attribute_path is not None:
                return self._node("get_attr", attribute_path, (), {}, name)
            args = (self._value(expr.value), expr.attr)
            return self._node("call_function", getattr, args, {}, name)
        if isinstance(expr, ast.BinOp):
            args = (self._value(expr.left), self._value(expr.right))
            return self._node("call_function", _BINARY[type(expr.op)], args, {}, name)
        if isinstance(expr, ast.UnaryOp) and type(expr.op) in _UNARY:
            args = (self._value(expr.operand),)
            return self._node("call_function", _UNARY[type(expr.op)], args, {}, name)
        if isinstance(expr, ast.Compare) and len(expr.ops) == 1:
            args = (self._value(expr.left), self._value(expr.comparators[0]))
            return self._node("call_function", _COMPARE[type(expr.ops[0])], args, {}, name)
        if isinstance(expr, ast.Subscript):
            args = (self._value(expr.value), self._value(expr.slice))
            return self._node("call_function", operator.getitem, args, {}, name)
        raise GraphSourceError(f"{name} = {ast.unparse(expr)}")

    def _is_node(self, expr: ast.expr) -> bool:
        return isinstance(expr, ast.Name) and expr.id in self.env

    def _value(self, expr: ast.expr) -> Any:
        """An argument: a node, or a constant (possibly holding nodes: a tuple, a slice)."""
        code = compile(ast.Expression(expr), "<graph argument>", "eval")
        return eval(code, self.namespace, dict(self.env))  # fx's own argument reprs

    def _node(self, op, target, args=(), kwargs=None, name=None) -> torch.fx.Node:
        return self.graph.create_node(op, target, tuple(args), dict(kwargs or {}), name=name)


def _self_path(expr: ast.expr) -> str | None:
    """``"a.b"`` for ``self.a.b`` (a submodule or attribute of the graph module)."""
    parts = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if isinstance(expr, ast.Name) and expr.id == "self" and parts:
        return ".".join(reversed(parts))
    return None


def graph_difference(recorded: torch.fx.Graph, rebuilt: torch.fx.Graph) -> str | None:
    """The first node where ``rebuilt`` is not ``recorded`` (op, target, arguments), or None.

    Inputs are compared in signature order and the other nodes in program order (fx
    writes every placeholder into the signature, wherever the graph has it)."""
    ordered = []
    for graph in (recorded, rebuilt):
        inputs = [n for n in graph.nodes if n.op == "placeholder"]
        ordered.append(inputs + [n for n in graph.nodes if n.op != "placeholder"])
    if len(ordered[0]) != len(ordered[1]):
        return f"{len(ordered[1])} nodes instead of {len(ordered[0])}"
    positions = [{n: i for i, n in enumerate(nodes)} for nodes in ordered]
    for a, b in zip(*ordered):
        same_target = a.target is b.target or (isinstance(a.target, str) and a.target == b.target)
        if a.op != b.op or not same_target:
            return f"node {a.name}: {a.op} {a.target} became {b.op} {b.target}"
        shapes = [
            _shape((node.args, node.kwargs), position) for node, position in zip((a, b), positions)
        ]
        if shapes[0] != shapes[1]:
            return f"node {a.name}: arguments {shapes[0]} became {shapes[1]}"
    return None


def _shape(value: Any, positions: dict) -> str:
    """``value`` with each node replaced by its position, as comparable text."""
    if isinstance(value, torch.fx.Node):
        return f"%{positions[value]}"
    if isinstance(value, (tuple, list)):
        inner = ", ".join(_shape(v, positions) for v in value)
        return f"{type(value).__name__}({inner})"
    if isinstance(value, dict):
        inner = ", ".join(f"{k!r}: {_shape(v, positions)}" for k, v in value.items())
        return "{" + inner + "}"
    if isinstance(value, slice):
        parts = (value.start, value.stop, value.step)
        return "slice(" + ", ".join(_shape(v, positions) for v in parts) + ")"
    return f"{type(value).__name__}:{value!r}"
