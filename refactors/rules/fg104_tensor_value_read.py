"""FG104: a tensor's value read into Python (``.item()``, ``int(t)`` …) decides control flow."""

from __future__ import annotations

import libcst as cst

from ..fast_tree import fast_visit
from ..rule import Invalid, Rule, Valid


class _ControlFlowTests(cst.CSTVisitor):
    """The expressions whose Python value steers execution in one function body."""

    def __init__(self) -> None:
        super().__init__()
        self.tests: list[cst.BaseExpression] = []
        self.depth = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.depth += 1
        return self.depth == 1

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.depth -= 1

    def visit_If(self, node: cst.If) -> None:
        self.tests.append(node.test)

    def visit_While(self, node: cst.While) -> None:
        self.tests.append(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self.tests.append(node.test)

    def visit_Assert(self, node: cst.Assert) -> None:
        self.tests.append(node.test)

    def visit_For(self, node: cst.For) -> None:
        self.tests.append(node.iter)

    def visit_Slice(self, node: cst.Slice) -> None:
        # ``x[:n]`` with a value read from a tensor: the shape depends on data.
        self.tests.extend(part for part in (node.lower, node.upper, node.step) if part is not None)


def _names_in(node: cst.CSTNode) -> set[str]:
    names: set[str] = set()

    class _Names(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            names.add(name.value)

    fast_visit(node, _Names())
    return names


class TensorValueReadRule(Rule):
    CODE = "FG104"
    NAME = "tensor-value-read"
    MESSAGE = (
        "`{call}` moves tensor data into Python and the value decides control flow; "
        "the graph breaks here. Keep the value a tensor (torch.where, tensor arithmetic)."
    )
    WHAT_IT_DOES = (
        "Reports `.item()`, `.tolist()`, `.numpy()`, `int(t)`, `float(t)` and `bool(t)` on a "
        "tensor whose result decides an `if`, `while`, conditional expression, `assert`, a "
        "`for` loop's iterable or a slice bound — directly or through a variable."
    )
    WHY_IS_THIS_BAD = (
        "Tensor data changes from batch to batch, so a compiler cannot bake the value into "
        "the graph: TorchDynamo and fullgraph's runtime split the graph at the read "
        "(runtime code FG202) and guard on the value, and the code that depends on it runs "
        "in the interpreter."
    )
    FIX_SAFETY = (
        "No fix is offered: replacing a Python branch on a tensor's value changes the "
        "program's structure in ways that cannot be proven equivalent statically. "
        "When the branch only selects between tensors, write it with `torch.where` "
        "(rule FG101 does this for `if` statements on tensors)."
    )
    USE_INSTEAD = (
        "import torch\n\n\n"
        "def scale(x: torch.Tensor) -> torch.Tensor:\n"
        "    return torch.where(x.sum() > 0, x * 2, x)\n"
    )
    VALID = (
        Valid(
            "import torch\n\n\ndef log_loss(loss: torch.Tensor) -> float:\n    return loss.item()\n"
        ),
        Valid(
            "import torch\n\n\n"
            "def f(x: torch.Tensor, n: int) -> torch.Tensor:\n"
            "    if n > 2:\n"
            "        return x[: x.shape[0] // 2]\n"
            "    return x\n"
        ),
    )
    INVALID = (
        Invalid(
            "import torch\n\n\n"
            "def scale(x: torch.Tensor) -> torch.Tensor:\n"
            "    if x.sum().item() > 0:\n"
            "        return x * 2\n"
            "    return x\n",
            refusal="`x.sum().item()`",
            line=5,
            column=7,
        ),
        Invalid(
            "import torch\n\n\n"
            "def head(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:\n"
            "    n = int(lengths.max())\n"
            "    return x[:n]\n",
            refusal="`int(lengths.max())`",
            line=5,
            column=8,
        ),
        Invalid(
            "import torch\n\n\n"
            "def repeat(x: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:\n"
            "    for _ in range(steps.item()):\n"
            "        x = x * 2\n"
            "    return x\n",
            refusal="`steps.item()`",
        ),
    )

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node not in self.context.functions:
            return
        types = self.context.tensor_types(node, likely=True)
        collector = _ControlFlowTests()
        fast_visit(node, collector)
        steering_names: set[str] = set()
        for test in collector.tests:
            steering_names |= _names_in(test)
        reported: list[cst.Call] = []
        for test in collector.tests:
            reported.extend(read for read in types.value_reads(test) if read not in reported)
        # Values read into a variable first, then used to steer.
        for name, values in types.assigned.items():
            if name not in steering_names:
                continue
            for value in values:
                if value is not None:
                    reported.extend(r for r in types.value_reads(value) if r not in reported)
        for read in reported:
            self.report(read, self.MESSAGE.format(call=self.context.code(read)))
