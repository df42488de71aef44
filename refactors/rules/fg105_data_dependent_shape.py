"""FG105: an operation whose output shape depends on tensor data (``nonzero``, boolean masks)."""

from __future__ import annotations

import libcst as cst

from ..analyses.tensor_types import TensorTypes
from ..analyses.torch_facts import DATA_DEPENDENT_SHAPE_FUNCTIONS, DATA_DEPENDENT_SHAPE_METHODS
from ..rule import Invalid, Rule, Valid

# Producers of boolean tensors: indexing with one is a boolean mask.
BOOLEAN_FUNCTIONS = frozenset(
    {
        "torch.isnan",
        "torch.isinf",
        "torch.isfinite",
        "torch.logical_and",
        "torch.logical_or",
        "torch.logical_not",
        "torch.logical_xor",
        "torch.gt",
        "torch.lt",
        "torch.ge",
        "torch.le",
        "torch.eq",
        "torch.ne",
        "torch.isin",
        "torch.isclose",
    }
)
BOOLEAN_METHODS = frozenset(
    {
        "bool",
        "isnan",
        "isinf",
        "isfinite",
        "logical_and",
        "logical_or",
        "logical_not",
        "gt",
        "lt",
        "ge",
        "le",
        "eq",
        "ne",
        "isclose",
    }
)


class DataDependentShapeRule(Rule):
    CODE = "FG105"
    NAME = "data-dependent-shape"
    MESSAGE = (
        "`{code}` has an output shape that depends on tensor data; the graph ends here. "
        "Use a fixed-shape form such as torch.where(mask, x, 0) or masked_fill."
    )
    WHAT_IT_DOES = (
        "Reports `nonzero`, `argwhere`, `masked_select`, `unique`, one-argument "
        "`torch.where(cond)` and indexing with a boolean mask (`x[x > 0]`)."
    )
    WHY_IS_THIS_BAD = (
        "The number of elements these produce is only known after the data is read, so "
        "the shapes of everything downstream are unknown when the graph is built. "
        "Dynamo ends the graph before them unless told to capture them; fullgraph's "
        "runtime keeps them in the graph only while no Python code reads those sizes "
        "(`idx.shape[0]`, `len(idx)`: runtime code FG203), and other compilers recompile "
        "for every new size."
    )
    FIX_SAFETY = (
        "No fix is offered: a fixed-shape rewrite (`torch.where(mask, x, 0)`) keeps the "
        "masked-out elements as zeros, which changes every later reduction that counts "
        "elements (mean, len, shape); only the author can tell whether that is intended."
    )
    USE_INSTEAD = (
        "import torch\n\n\n"
        "def positive_sum(x: torch.Tensor) -> torch.Tensor:\n"
        "    return torch.where(x > 0, x, 0).sum()\n"
    )
    VALID = (
        Valid(
            "import torch\n\n\n"
            "def pick(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:\n"
            "    return x[index]\n"
        ),
        Valid(
            "import torch\n\n\n"
            "def clip(x: torch.Tensor) -> torch.Tensor:\n"
            "    return torch.where(x > 0, x, 0)\n"
        ),
    )
    INVALID = (
        Invalid(
            "import torch\n\n\n"
            "def positive_sum(x: torch.Tensor) -> torch.Tensor:\n"
            "    return x[x > 0].sum()\n",
            refusal="`x[x > 0]`",
            line=5,
            column=11,
        ),
        Invalid(
            "import torch as T\n\n\n"
            "def positions(x: T.Tensor) -> T.Tensor:\n"
            "    return T.nonzero(x)\n",
            refusal="`T.nonzero(x)`",
        ),
        Invalid(
            "import torch\n\n\n"
            "def drop_nans(x: torch.Tensor) -> torch.Tensor:\n"
            "    mask = ~torch.isnan(x)\n"
            "    return x[mask]\n",
            refusal="`x[mask]`",
        ),
    )

    def _types(self, node: cst.CSTNode) -> TensorTypes | None:
        function = self.context.tensor_function(node)
        if function is None:
            return None
        return self.context.tensor_types(function, likely=True)

    def _report(self, node: cst.CSTNode) -> None:
        self.report(node, self.MESSAGE.format(code=self.context.code(node)))

    def visit_Call(self, node: cst.Call) -> None:
        names = self.context.qualified_names(node.func)
        if "torch.repeat_interleave" in names:
            # The output's size depends on data only when the repeats are a tensor
            # (``repeat_interleave(x, 2, 3)`` on real code: a Python int, no break).
            if self._tensor_repeats(node):
                self._report(node)
            return
        if names & DATA_DEPENDENT_SHAPE_FUNCTIONS:
            self._report(node)
            return
        if "torch.where" in names and len(node.args) == 1:
            self._report(node)
            return
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in DATA_DEPENDENT_SHAPE_METHODS:
            types = self._types(node)
            if types is not None and types.is_tensor(func.value):
                self._report(node)

    def _tensor_repeats(self, node: cst.Call) -> bool:
        positional = [a for a in node.args if a.keyword is None and not a.star]
        if any(a.star for a in node.args):
            return False
        keyword = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        if "repeats" in keyword:
            repeats = keyword["repeats"]
        elif len(positional) >= 2:
            repeats = positional[1].value
        else:
            # ``repeat_interleave(counts)``: the counts are the data.
            return len(positional) == 1 and "input" not in keyword
        types = self._types(node)
        return types is not None and types.is_tensor(repeats)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        types = self._types(node)
        if types is None or not types.is_tensor(node.value) or len(node.slice) != 1:
            return
        index = node.slice[0].slice
        if isinstance(index, cst.Index) and self._is_boolean_tensor(index.value, types, set()):
            self._report(node)

    def _is_boolean_tensor(
        self, node: cst.BaseExpression, types: TensorTypes, seen: set[str]
    ) -> bool:
        if isinstance(node, cst.Comparison):
            return types.is_tensor(node)
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.BitInvert):
            return self._is_boolean_tensor(node.expression, types, seen)
        if isinstance(node, cst.BinaryOperation) and isinstance(
            node.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)
        ):
            return self._is_boolean_tensor(node.left, types, seen) or self._is_boolean_tensor(
                node.right, types, seen
            )
        if isinstance(node, cst.Call):
            if self.context.qualified_names(node.func) & BOOLEAN_FUNCTIONS:
                return True
            func = node.func
            return (
                isinstance(func, cst.Attribute)
                and func.attr.value in BOOLEAN_METHODS
                and types.is_tensor(func.value)
            )
        if isinstance(node, cst.Name) and node.value not in seen:
            seen.add(node.value)
            values = types.assigned.get(node.value, [])
            return bool(values) and all(
                v is not None and self._is_boolean_tensor(v, types, seen) for v in values
            )
        return False
