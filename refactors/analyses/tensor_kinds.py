"""The three kinds of a guess about an expression, and what torch calls return.

:class:`Kind` is the answer of :class:`~fullgraph.refactors.analyses.tensor_types.TensorTypes`;
:func:`torch_call_kind` reads what a call of a torch function returns from the
tables of :mod:`fullgraph.refactors.analyses.torch_facts`.
"""

from __future__ import annotations

import enum

import libcst as cst
import libcst.metadata as meta

from .torch_facts import (
    NON_TENSOR_PREFIXES,
    NON_TENSOR_TORCH,
    TENSOR_CONSTRUCTORS,
    TENSOR_NAMESPACES,
    TUPLE_TORCH,
    TUPLE_WITH_DIM_TORCH,
)


class Kind(enum.Enum):
    TENSOR = "tensor"
    NOT_TENSOR = "not-tensor"
    UNKNOWN = "unknown"
    # Only while the assignments are being solved: the name's kind is not known *yet*.
    PENDING = "pending"


def qualified_names(wrapper_metadata, node: cst.CSTNode) -> set[str]:
    return {q.name for q in wrapper_metadata(meta.QualifiedNameProvider, node, set())}


def torch_call_kind(names: set[str], call: cst.Call) -> Kind | None:
    """What a call of the torch function ``names`` returns; None when it is no torch name.

    Only the operator namespaces (``torch``, ``torch.nn.functional``, ``torch.linalg``,
    ``torch.fft``, ``torch.special``) count as returning tensors, and in them not the
    names that return Python values or tuples.
    """
    torch_names = {n for n in names if n == "torch" or n.startswith("torch.")}
    if not torch_names:
        return None
    if torch_names & NON_TENSOR_TORCH:
        return Kind.NOT_TENSOR
    if torch_names & TENSOR_CONSTRUCTORS:
        return Kind.TENSOR
    if torch_names & TUPLE_TORCH:
        return Kind.UNKNOWN
    if torch_names & TUPLE_WITH_DIM_TORCH:
        # torch.max(x, 1) is (values, indices); torch.where(c) a tuple of index tensors.
        expected = 3 if "torch.where" in torch_names else 1
        if len(call.args) != expected:
            return Kind.UNKNOWN
    for name in torch_names:
        namespace, _, function = name.rpartition(".")
        if (
            namespace in TENSOR_NAMESPACES
            and function[:1].islower()
            and not function.startswith(NON_TENSOR_PREFIXES)
            and not function.startswith("_")
        ):
            return Kind.TENSOR
    return Kind.UNKNOWN


def is_metadata_read(node: cst.BaseExpression) -> bool:
    """``x.shape``, ``x.size()``, ``x.stride()``: a value whose items are Python ints."""
    if isinstance(node, cst.Attribute):
        return node.attr.value == "shape"
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value in ("size", "stride")
    )
