"""FG102: ``print``, ``logging`` or ``warnings.warn`` inside a compiled region.

Fix: deferred side effects (GraphMend).  The call becomes
``deferred(print, ...)`` and the function where compilation starts gets
``@defer_side_effects`` (both from :mod:`fullgraph.refactors.support`).
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from ..fast_tree import fast_visit
from ..rewrites.placement import with_decorators
from ..rule import Invalid, Rule, Valid

SUPPORT = "fullgraph.refactors.support"
DEFERRED = f"{SUPPORT}:deferred"
DEFERRED_METHOD = f"{SUPPORT}:deferred_method"
DEFER_SIDE_EFFECTS = f"{SUPPORT}:defer_side_effects"
LOG_METHODS = frozenset(
    {"debug", "info", "warning", "warn", "error", "critical", "exception", "log"}
)
SIDE_EFFECT_FUNCTIONS = frozenset(
    {"builtins.print", "print", "warnings.warn", *(f"logging.{m}" for m in LOG_METHODS)}
)


class _ModuleLoggers(cst.CSTVisitor):
    """Top-level names bound to ``logging.getLogger(...)``."""

    def __init__(self, qualified_names) -> None:
        super().__init__()
        self.names: set[str] = set()
        self._qualified_names = qualified_names

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        if isinstance(node.value, cst.Call) and "logging.getLogger" in self._qualified_names(
            node.value.func
        ):
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    self.names.add(target.target.value)


class PythonSideEffectRule(Rule):
    CODE = "FG102"
    NAME = "python-side-effect"
    MESSAGE = (
        "`{call}` is a Python side effect inside a compiled region ({reason}); "
        "the graph breaks here."
    )
    WHAT_IT_DOES = (
        "Reports `print`, `logging` calls (module functions and loggers from "
        "`logging.getLogger`) and `warnings.warn` in a function that will be compiled: an "
        "`nn.Module.forward`, a function decorated with `torch.compile` or "
        "`fullgraph.runtime.compile`, a configured entrypoint, or a function they call in "
        "the same file."
    )
    WHY_IS_THIS_BAD = (
        "Output cannot be part of an operator graph. The compiler ends the graph before the "
        "call, runs it in the interpreter and starts a new graph after it (runtime code "
        "FG201), so one forward pass becomes several graphs and loses fusion across the "
        "split."
    )
    FIX_SAFETY = (
        "The fix defers the call: `deferred(print, ...)` records it with its arguments "
        "evaluated now (tensors copied with `detach().clone()`, so later in-place updates do "
        "not change what is printed, and a printed tensor shows no `grad_fn`) and `@defer_side_effects` on the function where compilation starts emits "
        "the recorded calls when it returns or raises. Output order relative to other "
        "output of the same call changes (it comes at the end), warnings point at the "
        "support module instead of the original line, and mutable non-tensor arguments "
        "other than lists, tuples and dicts are not copied. No fix is offered when the "
        "call's result is used, or when the function where compilation starts is a "
        "generator or `async` (the decorator cannot wrap it).\n\n"
        "Under TorchDynamo each deferred call is a node of the graph (the operator "
        "`fullgraph::emit`, an ordered effect no compiler drops or moves) that makes the "
        "call when the graph runs, at its place, with every backend: no break, also where "
        "the function is inlined into another compiled function (a submodule's `forward`). "
        "A logger method is written "
        '`deferred_method(logger.info, "info", ...)` because a graph can carry the logger '
        "and the method's name but not the bound method. Arguments a graph cannot carry (objects "
        "other than tensors, numbers, strings, sizes and lists, tuples and dicts of them) "
        "make the call run where it stands there, which breaks the graph as the original "
        "did, and so do sizes or numbers Dynamo made symbolic, and a logger method's call "
        "under torch before 2.13 (whose Dynamo cannot name the logger)."
    )
    VALID = (
        Valid(
            "import torch\n\n\n"
            "def train_step(model, batch):\n"
            "    loss = model(batch).sum()\n"
            "    print('loss', loss)\n"
            "    return loss\n"
        ),
        Valid(
            "import torch\nfrom torch import nn\n\n\n"
            "class Net(nn.Module):\n"
            "    def forward(self, x):\n"
            "        print('x', x)  # fullgraph: ignore[FG102]\n"
            "        return x * 2\n"
        ),
    )
    INVALID = (
        Invalid(
            "import torch\nfrom torch import nn\n\n\n"
            "class Net(nn.Module):\n"
            "    def forward(self, x):\n"
            "        y = x * 2\n"
            "        print('y', y)  # debugging\n"
            "        return y + 1\n",
            expected_replacement=(
                "import torch\nfrom torch import nn\n"
                "from fullgraph.refactors.support import deferred, defer_side_effects\n\n\n"
                "class Net(nn.Module):\n"
                "    @defer_side_effects\n"
                "    def forward(self, x):\n"
                "        y = x * 2\n"
                "        deferred(print, 'y', y)  # debugging\n"
                "        return y + 1\n"
            ),
            line=8,
            column=8,
        ),
        Invalid(
            "import logging\nimport warnings\n\nimport torch\n\n"
            "logger = logging.getLogger(__name__)\n\n\n"
            "@torch.compile\n"
            "def normalize(x):\n"
            "    logger.info('norm %s', x.norm())\n"
            "    if x.shape[0] == 0:\n"
            "        warnings.warn('empty batch')\n"
            "    return helper(x)\n\n\n"
            "def helper(x):\n"
            "    logging.debug('helper')\n"
            "    return x / x.norm()\n",
            expected_replacement=(
                "import logging\nimport warnings\n\nimport torch\n"
                "from fullgraph.refactors.support import deferred_method, defer_side_effects, "
                "deferred\n\n"
                "logger = logging.getLogger(__name__)\n\n\n"
                "@torch.compile\n"
                "@defer_side_effects\n"
                "def normalize(x):\n"
                "    deferred_method(logger.info, \"info\", 'norm %s', x.norm())\n"
                "    if x.shape[0] == 0:\n"
                "        deferred(warnings.warn, 'empty batch')\n"
                "    return helper(x)\n\n\n"
                "def helper(x):\n"
                "    deferred(logging.debug, 'helper')\n"
                "    return x / x.norm()\n"
            ),
        ),
        Invalid(
            "import torch\n\n\n"
            "@torch.compile\n"
            "def f(x):\n"
            "    written = print('x', x) or 0\n"
            "    return x + written\n",
            refusal="result is used",
        ),
        Invalid(
            "import torch\n\n\n"
            "@torch.compile\n"
            "def f(x):\n"
            "    for row in x:\n"
            "        print(row)\n"
            "        yield row * 2\n",
            refusal="generator",
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        collector = _ModuleLoggers(self.context.qualified_names)
        fast_visit(node, collector)
        self.loggers = collector.names

    def _is_side_effect(self, call: cst.Call) -> bool:
        if self.context.qualified_names(call.func) & SIDE_EFFECT_FUNCTIONS:
            return True
        return self._is_logger_method(call)

    def _is_logger_method(self, call: cst.Call) -> bool:
        func = call.func
        return (
            isinstance(func, cst.Attribute)
            and func.attr.value in LOG_METHODS
            and isinstance(func.value, cst.Name)
            and func.value.value in self.loggers
        )

    def visit_Call(self, node: cst.Call) -> None:
        info = self.context.function_info(node)
        if info is None or not info.region_reason or not self._is_side_effect(node):
            return
        message = self.MESSAGE.format(call=self.context.code(node.func), reason=info.region_reason)
        refusal = self._refusal(node, info.roots)
        if refusal:
            self.report(node, message, refusal_reason=refusal)
            return
        comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        if self._is_logger_method(node):
            # ``logger.info``: Dynamo can carry the logger and the method's name into the
            # graph, not the bound method (a new object on every read).
            helper = DEFERRED_METHOD
            leading = [
                cst.Arg(node.func, comma=comma),
                cst.Arg(cst.SimpleString(f'"{node.func.attr.value}"'), comma=comma),
            ]
        else:
            helper = DEFERRED
            leading = [cst.Arg(node.func, comma=comma)]
        if not node.args:
            leading[-1] = leading[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        deferred = cst.Name(self.context.module_reference(helper))
        changes: dict[cst.CSTNode, cst.CSTNode] = {
            node: node.with_changes(func=deferred, args=[*leading, *node.args])
        }
        decorator_name = self.context.module_reference(DEFER_SIDE_EFFECTS)
        for root in info.roots:
            if not self._defers(root):
                # Applied to the root as the other changes left it (the rewritten call may
                # lie inside it), so every deferral of one function adds one decorator.
                changes[root] = AddDecorator(decorator_name)
        self.report(
            node,
            message,
            changes=changes,
            imports=[helper, DEFER_SIDE_EFFECTS],
            fix_title="Defer this side effect until the compiled call ends",
        )

    def _defers(self, function: cst.FunctionDef) -> bool:
        return any(
            f"{SUPPORT}.defer_side_effects" in self.context.qualified_names(d.decorator)
            for d in function.decorators
        )

    def _refusal(self, call: cst.Call, roots: list[cst.FunctionDef]) -> str | None:
        parent = self.context.parent(call)
        if not isinstance(parent, cst.Expr):
            return "the call's result is used, so the call cannot be postponed"
        for root in roots:
            if root.asynchronous is not None:
                return f"`{root.name.value}` is async; @defer_side_effects cannot wrap it"
            if _is_generator(root):
                return f"`{root.name.value}` is a generator; @defer_side_effects cannot wrap it"
        return None


@dataclasses.dataclass(frozen=True)
class AddDecorator:
    """A change that adds ``@name`` to a function, innermost (under staticmethod, torch.compile)."""

    name: str

    def __call__(self, function: cst.FunctionDef) -> cst.FunctionDef:
        decorators = [*function.decorators, cst.Decorator(cst.Name(self.name))]
        return with_decorators(function, decorators)


def _is_generator(function: cst.FunctionDef) -> bool:
    found = False

    class _Yields(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is function

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

        def visit_Yield(self, node: cst.Yield) -> None:
            nonlocal found
            found = True

    fast_visit(function, _Yields())
    return found
