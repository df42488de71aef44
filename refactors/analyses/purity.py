"""Can an expression be evaluated when its branch was not taken?

Predicated control flow computes *both* branches of an ``if`` and selects
the result with ``torch.where``.  That is only equivalent to the original
when evaluating the untaken branch has no effect (no in-place update, no
random numbers, no output) and cannot raise.  This module answers that
question for one expression, conservatively: anything it does not recognise
is refused, with the reason in words.
"""

from __future__ import annotations

import libcst as cst

from .tensor_types import TensorTypes
from .torch_facts import PURE_TENSOR_MODULES, VALUE_READ_METHODS

# torch functions that can raise on valid-looking data (singular matrices,
# out-of-range indices, invalid probabilities) or whose shape depends on data.
FAULTING_TORCH = frozenset(
    {
        "torch.inverse",
        "torch.linalg.inv",
        "torch.linalg.cholesky",
        "torch.cholesky",
        "torch.linalg.solve",
        "torch.gather",
        "torch.index_select",
        "torch.take",
        "torch.take_along_dim",
        "torch.nn.functional.embedding",
        "torch.nn.functional.one_hot",
        "torch.bincount",
        "torch.nonzero",
        "torch.unique",
        "torch.masked_select",
        "torch.multinomial",
        "torch.repeat_interleave",
        "torch.searchsorted",
        "torch.cond",
    }
)
# torch functions that draw random numbers (or write global state).
EFFECTFUL_TORCH = frozenset(
    {
        "torch.rand",
        "torch.randn",
        "torch.randint",
        "torch.randperm",
        "torch.rand_like",
        "torch.randn_like",
        "torch.randint_like",
        "torch.bernoulli",
        "torch.normal",
        "torch.poisson",
        "torch.manual_seed",
        "torch.nn.functional.dropout",
        "torch.dropout",
        "torch.save",
        "torch.load",
        "torch._assert_async",
    }
)
FAULTING_METHODS = frozenset(
    {
        "inverse",
        "cholesky",
        "gather",
        "index_select",
        "take",
        "take_along_dim",
        "nonzero",
        "unique",
        "masked_select",
        "multinomial",
        "bincount",
        "scatter",
        "scatter_add",
        "index_add",
        "index_copy",
        "index_fill",
        "index_put",
    }
)
EFFECTFUL_METHODS = (
    frozenset(
        {"bernoulli", "random_", "backward", "register_hook", "cpu", "cuda", "tolist", "numpy"}
    )
    | VALUE_READ_METHODS
)
ALLOWED_OPERATORS = (
    cst.Add,
    cst.Subtract,
    cst.Multiply,
    cst.Divide,
    cst.Power,
    cst.MatrixMultiply,
    cst.BitAnd,
    cst.BitOr,
    cst.BitXor,
)


class Impurity(Exception):
    """Why an expression may not be evaluated speculatively."""


def check_speculatable(node: cst.BaseExpression, types: TensorTypes, qualified_names, code) -> None:
    """Raise :class:`Impurity` unless ``node`` is effect-free and cannot fault."""
    if isinstance(node, (cst.Name, cst.BaseNumber, cst.SimpleString, cst.Ellipsis)):
        return
    if isinstance(node, cst.Attribute):
        check_speculatable(node.value, types, qualified_names, code)
        return
    if isinstance(node, cst.BinaryOperation):
        if not isinstance(node.operator, ALLOWED_OPERATORS):
            raise Impurity(f"`{code(node)}` can fault (integer division by zero)")
        check_speculatable(node.left, types, qualified_names, code)
        check_speculatable(node.right, types, qualified_names, code)
        return
    if isinstance(node, cst.UnaryOperation):
        if isinstance(node.operator, cst.Not):
            raise Impurity(f"`{code(node)}` reads a tensor's value")
        check_speculatable(node.expression, types, qualified_names, code)
        return
    if isinstance(node, cst.Comparison):
        check_speculatable(node.left, types, qualified_names, code)
        for target in node.comparisons:
            check_speculatable(target.comparator, types, qualified_names, code)
        return
    if isinstance(node, (cst.Tuple, cst.List)):
        for element in node.elements:
            check_speculatable(element.value, types, qualified_names, code)
        return
    if isinstance(node, cst.Subscript):
        _check_subscript(node, types, qualified_names, code)
        return
    if isinstance(node, cst.Call):
        _check_call(node, types, qualified_names, code)
        return
    raise Impurity(f"`{code(node)}` is not an expression the rule can prove effect-free")


def index_parts(element: cst.SubscriptElement) -> list:
    """The expressions of one index: ``i``, or a slice's start, stop and step (maybe None)."""
    index = element.slice
    if isinstance(index, cst.Slice):
        return [index.lower, index.upper, index.step]
    return [index.value]


def _check_subscript(node: cst.Subscript, types, qualified_names, code) -> None:
    check_speculatable(node.value, types, qualified_names, code)
    for element in node.slice:
        for part in index_parts(element):
            if part is None or isinstance(part, (cst.BaseNumber, cst.Ellipsis)):
                continue
            if isinstance(part, cst.Name) and part.value == "None":
                continue
            if isinstance(part, cst.UnaryOperation) and isinstance(part.expression, cst.BaseNumber):
                continue
            raise Impurity(
                f"`{code(node)}` indexes with a computed index, which can be out of range"
            )


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


def _check_call(node: cst.Call, types, qualified_names, code) -> None:
    func = node.func
    names = torch_names(qualified_names, func)
    if names:
        if names & EFFECTFUL_TORCH:
            raise Impurity(f"`{code(node)}` has an effect (random numbers or I/O)")
        if names & FAULTING_TORCH:
            raise Impurity(f"`{code(node)}` can fault on some data")
        if any(
            n.startswith("torch.nn.") and not n.startswith("torch.nn.functional.") for n in names
        ):
            raise Impurity(f"`{code(node)}` builds a module")
        if any(n.rsplit(".", 1)[-1].endswith("_") for n in names):
            raise Impurity(f"`{code(node)}` updates a tensor in place")
    elif types.submodule(func) is not None:
        layer = types.submodule(func)
        if layer not in PURE_TENSOR_MODULES:
            raise Impurity(f"`{code(node)}` calls a `{layer}`, which has effects or can fault")
    elif isinstance(func, cst.Attribute) and types.is_tensor(func.value):
        method = func.attr.value
        if method.endswith("_") and not method.endswith("__"):
            raise Impurity(f"`{code(node)}` updates a tensor in place")
        if method in EFFECTFUL_METHODS:
            raise Impurity(f"`{code(node)}` reads the tensor's value or has an effect")
        if method in FAULTING_METHODS:
            raise Impurity(f"`{code(node)}` can fault on some data")
        check_speculatable(func.value, types, qualified_names, code)
    else:
        if isinstance(func, cst.Call):  # nn.Linear(4, 4)(x): what the inner call does first
            _check_call(func, types, qualified_names, code)
        raise Impurity(
            f"`{code(node.func)}` is called, and the rule cannot prove the call free of "
            "effects and faults when its branch is not taken"
        )
    for arg in node.args:
        check_speculatable(arg.value, types, qualified_names, code)
