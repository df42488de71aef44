"""How one torch call is written as a torch.fx node, and the name it is counted under.

Python operators on tensors become ``operator.*`` nodes and tensor methods
``call_method`` nodes, so the graphs read like the program; a property read
(``x.T``) becomes a ``getattr``.
"""

from __future__ import annotations

import operator

import torch
import torch.fx

from fullgraph.runtime.torch_internals import getset_descriptor_name

# Python operators on tensors, recorded as operator.* nodes for readable graphs.
_BINARY_DUNDERS = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "truediv": operator.truediv,
    "floordiv": operator.floordiv,
    "mod": operator.mod,
    "pow": operator.pow,
    "matmul": operator.matmul,
    "and": operator.and_,
    "or": operator.or_,
    "xor": operator.xor,
    "lshift": operator.lshift,
    "rshift": operator.rshift,
}
_COMPARE_DUNDERS = {
    "__eq__": operator.eq,
    "__ne__": operator.ne,
    "__lt__": operator.lt,
    "__le__": operator.le,
    "__gt__": operator.gt,
    "__ge__": operator.ge,
}
_UNARY_DUNDERS = {
    "__neg__": operator.neg,
    "__pos__": operator.pos,
    "__invert__": operator.invert,
    "__abs__": operator.abs,
}


def target_name(func) -> str:
    """The name a torch call is counted under (``torch.relu``, ``Tensor.add``)."""
    prop = getset_descriptor_name(func)
    if prop:
        return f"Tensor.{prop}"
    name = getattr(func, "__name__", repr(func))
    qual = getattr(func, "__qualname__", name)
    if qual.startswith(("TensorBase.", "Tensor.")):
        return "Tensor." + name
    module = getattr(func, "__module__", None) or "torch"
    return f"{module}.{name}".replace("torch._C._nn.", "torch.nn.functional.").replace(
        "torch._C._VariableFunctions.", "torch."
    )


def is_tensor_method(func) -> bool:
    """Whether ``func`` is a method of ``Tensor`` (called on its first argument)."""
    qual = getattr(func, "__qualname__", "")
    return qual.startswith(("TensorBase.", "Tensor.")) or getattr(func, "__objclass__", None) in (
        torch._C.TensorBase,
        torch.Tensor,
    )


def emit_call(graph: torch.fx.Graph, func, args, kwargs) -> torch.fx.Node:
    """The node of ``graph`` that makes the torch call ``func(*args, **kwargs)`` (``args``
    and ``kwargs`` already hold nodes): an operator, a method or a function call."""
    prop = getset_descriptor_name(func)
    if prop:
        return graph.call_function(getattr, (args[0], prop))
    name = getattr(func, "__name__", "")
    if is_tensor_method(func):
        if name in _COMPARE_DUNDERS or name in _UNARY_DUNDERS:
            target = _COMPARE_DUNDERS.get(name) or _UNARY_DUNDERS[name]
            return graph.call_function(target, args, kwargs)
        stripped = name.strip("_")
        if name.startswith("__") and stripped in _BINARY_DUNDERS and not kwargs:
            return graph.call_function(_BINARY_DUNDERS[stripped], args)
        if name.startswith("__r") and stripped[1:] in _BINARY_DUNDERS and not kwargs:
            return graph.call_function(_BINARY_DUNDERS[stripped[1:]], (args[1], args[0]))
        if name.startswith("__"):
            return graph.call_function(func, args, kwargs)
        return graph.call_method(name, args, kwargs)
    return graph.call_function(func, args, kwargs)


def is_lifted_int(node: object) -> bool:
    """A lifted scalar as an op's operand (``scalar3.item()``, see ``GraphTape.lifted_number``)."""
    return isinstance(node, torch.fx.Node) and node.op == "call_method" and node.target == "item"


def indexed_by_lifted_int(
    graph: torch.fx.Graph, func, args: tuple, tensor_dims: int, value_dims: int
) -> torch.fx.Node:
    """``tensor[i]`` / ``tensor[i] = v`` of a lifted int ``i`` (``monitor/lifted_index.py``)
    as the graph writes it: ``torch.select(tensor, 0, i)`` (a tracer takes no symbolic
    int as a subscript), then ``copy_`` / ``fill_`` of the value for a store.  Checks of
    ``0 <= i < tensor.size(0)`` come first: the tracer of a compiled graph then knows
    the view's start is in range (the record's guard makes it so)."""
    tensor, index = args[0], args[1]
    graph.call_function(torch._check, (graph.call_function(operator.ge, (index, 0)),))
    size = graph.call_method("size", (tensor, 0))
    graph.call_function(torch._check, (graph.call_function(operator.lt, (index, size)),))
    view = graph.call_function(torch.select, (tensor, 0, index))
    if func is torch.Tensor.__getitem__:
        return view
    value = args[2]
    if not isinstance(value, torch.fx.Node) or is_lifted_int(value):
        return graph.call_method("fill_", (view, value))  # a number stored
    extra = value_dims - (tensor_dims - 1)
    if extra > 0:  # ``t[i] = v`` drops v's leading sizes of 1 first (copy_ would not)
        value = graph.call_function(torch.flatten, (value, 0, extra))  # (they are all 1)
    return graph.call_method("copy_", (view, value))
