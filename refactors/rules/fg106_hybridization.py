"""FG106: hybridization — a function that can run as one compiled graph, or why it cannot.

Fix: add ``@fullgraph.runtime.compile``.  The analysis lives in
:mod:`fullgraph.refactors.analyses.hybridization`.
"""

from __future__ import annotations

import libcst as cst

from ..analyses.hybridization import NO_TENSOR_PARAMETERS, analyze, loggers_in
from ..fast_tree import fast_visit
from ..rewrites.placement import with_decorators
from ..rule import Invalid, Rule, Valid

RUNTIME = "fullgraph.runtime"


class HybridizationRule(Rule):
    CODE = "FG106"
    NAME = "hybridization"
    MESSAGE = (
        "`{name}` can run as one compiled graph: it takes tensors, and the rule found no "
        "Python side effect (print, logging, I/O, stores), no branch on tensor data, no "
        "recursion and no primitive parameter in it or the functions of this file it calls."
    )
    REFUSED = "`{name}` is not a candidate for compilation: {reasons}."
    # Reverse refactoring: compiled, but nothing to gain.
    NOTHING_TO_COMPILE = (
        "`{name}` is decorated for compilation, but {reason}; compiling it gains nothing "
        "(remove the decorator)."
    )
    SEVERITY = "information"
    APPLY_BY_DEFAULT = False
    WHAT_IT_DOES = (
        "Finds functions (and `nn.Module.forward` methods) that use torch and decides whether "
        "they can be compiled as a whole: they take tensor parameters, have no Python side "
        "effects (printing, logging — also through a logger such as `log = "
        "logging.getLogger(__name__)` —, I/O, global or field writes — also in functions of "
        "the same file that they call), do not branch on tensor data (`if x.sum().item() > 0`), "
        "are not recursive and have no primitive parameters "
        "(`int`, `float`, `bool`, `str`, literal defaults). Eligible module-level functions "
        "get a fix that adds `@fullgraph.runtime.compile`; eligible methods (`forward`) are "
        "reported with the advice to compile the instance, `fullgraph.runtime.compile(model)`; "
        "the others get the named reasons "
        "HAS_PYTHON_SIDE_EFFECTS, HAS_DATA_DEPENDENT_BRANCHES, READS_TENSOR_DATA (`.item()`, "
        "`.tolist()`, `torch.unique`: tensor data into Python or a shape), IS_RECURSIVE, "
        "HAS_PRIMITIVE_PARAMETERS, "
        "NO_TENSOR_PARAMETERS or UNDETERMINABLE_TENSOR_PARAMETERS. A function already "
        "decorated for compilation that has no tensor parameters is reported too "
        "(compiling it gains nothing)."
    )
    WHY_IS_THIS_BAD = (
        "Eager execution dispatches every operator from Python; a compiled graph fuses them "
        "and skips the interpreter on later calls (the speculative-refactoring study measured "
        "a mean 2.16x speed-up on eligible functions). Compiling an ineligible function "
        "costs instead: side effects break the graph, primitive parameters recompile it for "
        "every value."
    )
    FIX_SAFETY = (
        "`fix_source` (and `fullgraph fix`) applies this fix only when FG106 is selected "
        "explicitly, since it opts a function into compilation rather than removing a break. "
        "The fix only adds a decorator; the runtime compiles by running the function under "
        "observation, so results do not change, and it falls back to eager execution when "
        "a function keeps recompiling. When the source does not say that the parameters "
        "are tensors (no annotations), the rule assumes it from naming conventions "
        "(`forward`, `*_step`, `call`, `__call__`, `*inference*`, `predict`) or from the "
        "body using them as tensors, and the message says so — check the assumption before "
        "applying the fix."
    )
    VALID = (
        Valid("def add(a, b):\n    return a + b\n"),
        Valid(
            "import torch\n\n\n"
            "@torch.compile\n"
            "def f(x: torch.Tensor) -> torch.Tensor:\n"
            "    return x.relu()\n"
        ),
    )
    INVALID = (
        Invalid(
            "import torch\n\n\n"
            "def gelu_mlp(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:\n"
            "    return torch.nn.functional.gelu(x @ w)\n",
            expected_replacement=(
                "import torch\n"
                "import fullgraph.runtime\n\n\n"
                "@fullgraph.runtime.compile\n"
                "def gelu_mlp(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:\n"
                "    return torch.nn.functional.gelu(x @ w)\n"
            ),
            line=4,
            column=4,
        ),
        Invalid(
            "import torch\nimport fullgraph.runtime as fr\n\n\n"
            "def train_step(model, batch):\n"
            "    return torch.relu(model(batch)).mean()\n",
            expected_replacement=(
                "import torch\nimport fullgraph.runtime as fr\n\n\n"
                "@fr.compile\n"
                "def train_step(model, batch):\n"
                "    return torch.relu(model(batch)).mean()\n"
            ),
            refusal="assumed from naming conventions",
        ),
        Invalid(
            "from torch import nn\n\n\n"
            "class Block(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.proj = nn.Linear(4, 4)\n\n"
            "    def forward(self, x):\n"
            "        return self.proj(x).relu()\n",
            refusal="assumed from naming conventions",
            line=9,
            column=8,
        ),
        Invalid(
            "import torch\n\n\n"
            "def scale(x: torch.Tensor, factor: float) -> torch.Tensor:\n"
            "    print('scaling')\n"
            "    return x * factor\n",
            refusal="HAS_PRIMITIVE_PARAMETERS",
        ),
        Invalid(
            "import torch\n\n\n"
            "def scale(x: torch.Tensor) -> torch.Tensor:\n"
            "    print('scaling')\n"
            "    return x * 2\n",
            refusal="HAS_PYTHON_SIDE_EFFECTS",
        ),
        Invalid(
            "import logging\n\nimport torch\n\nlog = logging.getLogger(__name__)\n\n\n"
            "def scale(x: torch.Tensor) -> torch.Tensor:\n"
            "    log.info('scaling')\n"
            "    return x * 2\n",
            refusal="HAS_PYTHON_SIDE_EFFECTS",
            line=8,
            column=4,
        ),
        Invalid(
            "import torch\n\n\n"
            "def clip(x: torch.Tensor) -> torch.Tensor:\n"
            "    if x.abs().max().item() > 1:\n"
            "        return x / 2\n"
            "    return x\n",
            refusal="HAS_DATA_DEPENDENT_BRANCHES",
        ),
        Invalid(
            "import torch\n\n\ndef sizes(x: torch.Tensor) -> list:\n    return x.sum(0).tolist()\n",
            refusal="READS_TENSOR_DATA",
        ),
        Invalid(
            "import torch\n\n\n"
            "def scale(x: torch.Tensor, factor: float | None = None) -> torch.Tensor:\n"
            "    return x * (factor or 2.0)\n",
            refusal="HAS_PRIMITIVE_PARAMETERS",
        ),
        Invalid(
            "import torch\n\n\n"
            "def power(x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:\n"
            "    return x if n.numel() == 0 else x * power(x, n[1:])\n",
            refusal="IS_RECURSIVE",
        ),
        Invalid(
            "import torch\n\n\ndef make(n: int) -> torch.Tensor:\n    return torch.ones(n)\n",
            refusal="NO_TENSOR_PARAMETERS",
        ),
        Invalid(
            "import torch\n\n\ndef blend(a, b):\n    return torch.lerp(a.float(), b, 0.5)\n",
            expected_replacement=(
                "import torch\n"
                "import fullgraph.runtime\n\n\n"
                "@fullgraph.runtime.compile\n"
                "def blend(a, b):\n"
                "    return torch.lerp(a.float(), b, 0.5)\n"
            ),
            refusal="because the body uses them as tensors",
        ),
        Invalid(
            "import fullgraph.runtime\nimport torch\n\n\n"
            "@fullgraph.runtime.compile\n"
            "def make(n: int, fill: float) -> torch.Tensor:\n"
            "    return torch.full((n,), fill)\n",
            refusal="NO_TENSOR_PARAMETERS",
            line=6,
            column=4,
        ),
        Invalid(
            "import torch\n\n\ndef combine(a, b):\n    return [torch.zeros(3), a, b]\n",
            refusal="UNDETERMINABLE_TENSOR_PARAMETERS",
        ),
    )

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        info = self.context.functions.get(node)
        if (
            info is None
            or "<locals>" in info.qualname
            or info.region_reason.startswith("it is called")
        ):
            return
        name = node.name.value
        if name.startswith("__") and name != "__call__":
            return
        is_forward = info.in_module_class and name == "forward"
        if not (is_forward or info.compile_decorated or self._uses_torch(node)):
            return
        types = self.context.tensor_types(node)
        verdict = analyze(
            info,
            self.context.functions,
            types,
            self.context.qualified_names,
            self.context.code,
            self._loggers(),
        )
        if info.compile_decorated:
            no_tensors = [r for r in verdict.reasons if r.startswith(NO_TENSOR_PARAMETERS)]
            if no_tensors:
                self.report(
                    node.name,
                    self.NOTHING_TO_COMPILE.format(name=name, reason=no_tensors[0]),
                    refusal_reason=no_tensors[0],
                    severity="hint",
                )
            return
        if not verdict.eligible:
            reasons = "; ".join(verdict.reasons + verdict.assumptions)
            self.report(
                node.name,
                self.REFUSED.format(name=name, reasons=reasons),
                refusal_reason="; ".join(verdict.reasons),
                severity="hint",
            )
            return
        message = self.MESSAGE.format(name=name)
        if verdict.assumptions:
            message += " Note: " + "; ".join(verdict.assumptions) + "."
        if info.class_name is not None:
            # A decorator on a method would need the compiled callable to bind `self`;
            # compiling the instance (`fullgraph.runtime.compile(model)`) does not.
            message += " Compile the instance: `fullgraph.runtime.compile(model)`."
            self.report(
                node.name,
                message,
                refusal_reason="a method is compiled through its instance "
                "(`fullgraph.runtime.compile(model)`), not with a decorator",
                # Every model's forward qualifies: advice, not something to act on per file.
                severity="hint",
            )
            return
        runtime = self.context.module_reference(RUNTIME)
        decorator = cst.Decorator(cst.parse_expression(f"{runtime}.compile"))
        changed = with_decorators(node, [*node.decorators, decorator])
        self.report(
            node.name,
            message,
            changes={node: changed},
            imports=[RUNTIME],
            fix_title=f"Compile `{name}` with fullgraph.runtime.compile",
            severity=self.SEVERITY,
        )

    def _loggers(self) -> frozenset[str]:
        """Names this file binds to a logger, found once per lint."""
        loggers = self.__dict__.get("_logger_names")
        if loggers is None:
            assignments = self.context.module_nodes(cst.Assign)
            if assignments is None:
                assignments = []

                class _Assignments(cst.CSTVisitor):
                    def visit_Assign(self, node: cst.Assign) -> None:
                        assignments.append(node)

                fast_visit(self.context.module, _Assignments())
            loggers = loggers_in(assignments, self.context.qualified_names, self.context.code)
            self.__dict__["_logger_names"] = loggers
        return loggers

    def _uses_torch(self, node: cst.FunctionDef) -> bool:
        qualified_names = self.context.qualified_names
        found = False

        class _Torch(cst.CSTVisitor):
            def visit_Name(self, name: cst.Name) -> None:
                nonlocal found
                found = found or any(n.startswith("torch") for n in qualified_names(name))

            def visit_Attribute(self, attribute: cst.Attribute) -> None:
                nonlocal found
                found = found or any(n.startswith("torch") for n in qualified_names(attribute))

        fast_visit(node, _Torch())
        return found
