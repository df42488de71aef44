"""What a type annotation says about a name: a tensor, not one, or a tensor or None.

``torch.Tensor`` (however imported, or spelled in a string) is a tensor;
``int``, ``bool``, ``str`` … are not; ``Optional[torch.Tensor]``,
``torch.Tensor | None`` and a two-member ``Union`` with None are
:data:`OPTIONAL`, which :class:`~fullgraph.refactors.analyses.tensor_types.TensorTypes`
counts as a tensor only where the code is evaluated as it stands.
"""

from __future__ import annotations

import libcst as cst
from libcst.helpers import get_full_name_for_node

from ..fast_tree import fast_visit
from .tensor_kinds import Kind, qualified_names
from .torch_facts import PRIMITIVE_ANNOTATIONS, TENSOR_ANNOTATIONS

# "A tensor or None": an annotation's verdict, never a kind in ``env``.
OPTIONAL = "tensor or None"


def is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def union_members(annotation: cst.BaseExpression, names: set[str]) -> list | None:
    """The members of ``Optional[X]`` (X and None), ``Union[…]`` or ``X | Y``; None otherwise."""
    if isinstance(annotation, cst.BinaryOperation) and isinstance(annotation.operator, cst.BitOr):
        left = union_members(annotation.left, set()) or [annotation.left]
        right = union_members(annotation.right, set()) or [annotation.right]
        return [*left, *right]
    if not isinstance(annotation, cst.Subscript):
        return None
    spelled = get_full_name_for_node(annotation.value) or ""
    kinds = names | {spelled, spelled.rpartition(".")[2]}
    elements = [e.slice.value for e in annotation.slice if isinstance(e.slice, cst.Index)]
    if kinds & {"typing.Optional", "Optional"} and len(elements) == 1:
        return [elements[0], cst.Name("None")]
    if kinds & {"typing.Union", "Union"}:
        return elements
    return None


def annotations_in(function: cst.FunctionDef) -> dict[str, list[cst.BaseExpression]]:
    """Name -> its annotations in ``function``'s own body (``h: torch.Tensor = …``)."""
    found: dict[str, list[cst.BaseExpression]] = {}

    class _Annotated(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is function

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return False

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            if isinstance(node.target, cst.Name):
                found.setdefault(node.target.value, []).append(node.annotation.annotation)

    fast_visit(function, _Annotated())
    return found


def annotation_kind(annotation: cst.BaseExpression, get_metadata) -> Kind | str:
    """What an annotation says: a tensor, not one, or unknown; ``OPTIONAL`` for a
    tensor or None (``Optional[torch.Tensor]``, ``torch.Tensor | None``, a Union)."""
    if isinstance(annotation, cst.SimpleString):
        try:
            annotation = cst.parse_expression(annotation.evaluated_value)
        except (cst.ParserSyntaxError, ValueError, TypeError):
            return Kind.UNKNOWN
        # A string annotation's names are resolved by their spelling alone.
        return spelled_kind(annotation)
    names = qualified_names(get_metadata, annotation)
    names.add(get_full_name_for_node(annotation) or "")
    if names & TENSOR_ANNOTATIONS or "Tensor" in names:
        return Kind.TENSOR
    if names & PRIMITIVE_ANNOTATIONS:
        return Kind.NOT_TENSOR
    members = union_members(annotation, names)
    if members is not None:
        kinds = {annotation_kind(m, get_metadata) for m in members if not is_none(m)}
        if len(members) == 2 and any(is_none(m) for m in members) and kinds == {Kind.TENSOR}:
            return OPTIONAL
    return Kind.UNKNOWN


def spelled_kind(annotation: cst.BaseExpression) -> Kind | str:
    """What an annotation says by its spelling alone (a string annotation's names)."""
    spelled = get_full_name_for_node(annotation) or ""
    if spelled in TENSOR_ANNOTATIONS or spelled in ("Tensor", "torch.Tensor"):
        return Kind.TENSOR
    members = union_members(annotation, {spelled})
    if members is not None and len(members) == 2 and any(is_none(m) for m in members):
        (other,) = [m for m in members if not is_none(m)] or [None]
        if other is not None and spelled_kind(other) is Kind.TENSOR:
            return OPTIONAL
    return Kind.UNKNOWN
