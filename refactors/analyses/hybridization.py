"""Hybridization analysis: can a function run as one compiled graph? (PAPERS.md §2)

For each candidate function the analysis establishes four facts — tensor
parameters, no Python side effects, not recursive, no primitive parameters —
and names the reason for every fact that fails (the names come from the
speculative-refactoring paper, so users of that tool recognise them).  When a
fact cannot be decided from the source, a naming-convention rule
(``forward``, ``*_step``, ``call``, ``__call__``, ``*inference*``) may assume
it; the assumption is returned so the diagnostic can say so.
"""

from __future__ import annotations

import dataclasses
import re

import libcst as cst

from ..fast_tree import fast_visit
from .annotations import is_none, union_members
from .regions import FunctionInfo
from .tensor_kinds import Kind
from .tensor_types import TensorTypes
from .torch_facts import PRIMITIVE_ANNOTATIONS

HAS_PYTHON_SIDE_EFFECTS = "HAS_PYTHON_SIDE_EFFECTS"
IS_RECURSIVE = "IS_RECURSIVE"
HAS_PRIMITIVE_PARAMETERS = "HAS_PRIMITIVE_PARAMETERS"
NO_TENSOR_PARAMETERS = "NO_TENSOR_PARAMETERS"
UNDETERMINABLE_TENSOR_PARAMETERS = "UNDETERMINABLE_TENSOR_PARAMETERS"

SPECULATIVE_NAME = re.compile(r"^(forward|call|__call__|.*_step|.*inference.*|predict)$")
SIDE_EFFECT_CALLS = frozenset(
    {
        "builtins.print",
        "print",
        "builtins.open",
        "open",
        "builtins.input",
        "input",
        "warnings.warn",
        "time.time",
        "time.sleep",
        "time.perf_counter",
        "os.system",
        "subprocess.run",
        *(
            f"logging.{m}"
            for m in ("debug", "info", "warning", "error", "critical", "exception", "log")
        ),
    }
)
SIDE_EFFECT_MODULE_PREFIXES = ("random.", "numpy.random.", "logging.", "sys.stdout", "sys.stderr")
HAS_DATA_DEPENDENT_BRANCHES = "HAS_DATA_DEPENDENT_BRANCHES"
READS_TENSOR_DATA = "READS_TENSOR_DATA"
# Calls whose result size depends on tensor data (FG105's): the graph ends there.
DATA_DEPENDENT_SHAPE_CALLS = frozenset(
    {"nonzero", "argwhere", "masked_select", "unique", "unique_consecutive", "bincount"}
)
# Methods of a logger (``log = logging.getLogger(__name__)``, transformers'
# ``logging.get_logger``, ``self.logger``): a call on a receiver that is or may be a
# logger is taken to log (the rule cannot prove that it does not).
LOGGER_METHODS = frozenset(
    {
        "debug", "info", "warning", "warn", "error", "critical", "exception", "log",
        "warning_once", "info_once", "warning_advice",
    }
)  # fmt: skip
LOGGER_FACTORIES = ("getLogger", "get_logger")
# Methods that change a list, dict or set in place (on an argument: the caller's object).
MUTATING_METHODS = frozenset(
    {"pop", "popitem", "append", "extend", "insert", "remove", "clear", "update", "setdefault",
     "add", "discard", "sort", "reverse"}
)  # fmt: skip


@dataclasses.dataclass
class Verdict:
    """The facts about one function: refusal reasons (empty when eligible) and assumptions."""

    reasons: list[str]
    assumptions: list[str]

    @property
    def eligible(self) -> bool:
        return not self.reasons


class _Body(cst.CSTVisitor):
    """Side effects and calls in one function body (not in nested functions)."""

    def __init__(
        self,
        function: cst.FunctionDef,
        qualified_names,
        code,
        loggers: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__()
        self.function = function
        self.qualified_names = qualified_names
        self.code = code
        # Names (``log``, ``self.logger``) the module or the function binds to a logger.
        self.loggers = loggers
        self.effects: list[str] = []
        self.calls: set[str] = set()
        params = function.params
        self.parameters = {
            p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)
        } | {p.name.value for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)}
        # Conditions of if/while/conditional expressions/asserts, in this body.
        self.tests: list[cst.BaseExpression] = []
        # ``x.item()``, ``x.tolist()``, ``torch.unique(x)``: tensor data into Python or
        # into a shape, either a graph break (spelled as in the source).
        self.data_reads: list[str] = []

    def visit_If(self, node: cst.If) -> None:
        self.tests.append(node.test)

    def visit_While(self, node: cst.While) -> None:
        self.tests.append(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self.tests.append(node.test)

    def _logs(self, func: cst.BaseExpression) -> bool:
        if not (isinstance(func, cst.Attribute) and func.attr.value in LOGGER_METHODS):
            return False
        receiver = func.value
        spelled = self.code(receiver)
        if spelled in self.loggers or "log" in spelled.rpartition(".")[2].lower():
            return True
        # ``logging.getLogger(__name__).info(…)``
        return isinstance(receiver, cst.Call) and any(
            n.endswith(LOGGER_FACTORIES) for n in self.qualified_names(receiver.func)
        )

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return node is self.function

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Call(self, node: cst.Call) -> None:
        names = self.qualified_names(node.func)
        if names & SIDE_EFFECT_CALLS or any(
            n.startswith(SIDE_EFFECT_MODULE_PREFIXES) for n in names
        ):
            self.effects.append(f"calls `{self.code(node.func)}`")
        elif self._logs(node.func):
            self.effects.append(f"logs with `{self.code(node.func)}`")
        called = node.func.attr.value if isinstance(node.func, cst.Attribute) else ""
        receiver = node.func.value if isinstance(node.func, cst.Attribute) else None
        if (
            called in MUTATING_METHODS
            and isinstance(receiver, cst.Name)
            and receiver.value in self.parameters
        ):
            # ``kwargs.pop("pool_indices")`` changes the caller's object (qwen2_5_omni).
            self.effects.append(f"changes its argument with `{self.code(node.func)}`")
        if called in ("item", "tolist", "numpy") and not node.args:
            self.data_reads.append(f"`{self.code(node)}`")
        elif called in DATA_DEPENDENT_SHAPE_CALLS or any(
            n.rpartition(".")[2] in DATA_DEPENDENT_SHAPE_CALLS and n.startswith("torch.")
            for n in names
        ):
            self.data_reads.append(f"`{self.code(node.func)}` (an output shape set by data)")
        elif "torch.where" in names and len(node.args) == 1:
            self.data_reads.append(f"`{self.code(node)}` (an output shape set by data)")
        func = node.func
        if isinstance(func, cst.Name):
            self.calls.add(func.value)
        elif (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
        ):
            self.calls.add(func.attr.value)

    def visit_Global(self, node: cst.Global) -> None:
        self.effects.append("writes global " + ", ".join(f"`{n.name.value}`" for n in node.names))

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.effects.append("writes nonlocal " + ", ".join(f"`{n.name.value}`" for n in node.names))

    def _store(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Attribute):
            self.effects.append(f"stores to the field `{self.code(target)}`")
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._store(element.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._store(target.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._store(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._store(node.target)


def analyze(
    info: FunctionInfo,
    functions: dict[cst.FunctionDef, FunctionInfo],
    types: TensorTypes,
    qualified_names,
    code,
    loggers: frozenset[str] = frozenset(),
) -> Verdict:
    function = info.node
    reasons: list[str] = []
    assumptions: list[str] = []
    bodies: dict[cst.FunctionDef, _Body] = {}

    def body(node: cst.FunctionDef) -> _Body:
        if node not in bodies:
            bodies[node] = _Body(node, qualified_names, code, loggers)
            fast_visit(node, bodies[node])
        return bodies[node]

    by_name: dict[str, list[FunctionInfo]] = {}
    for other in functions.values():
        by_name.setdefault(other.node.name.value, []).append(other)

    def callees(node_info: FunctionInfo) -> list[FunctionInfo]:
        found = []
        for name in body(node_info.node).calls:
            for callee in by_name.get(name, []):
                if callee.class_name in (None, node_info.class_name):
                    found.append(callee)
        return found

    # Side effects, here or in a function of this file that it calls.
    effects: list[str] = []
    seen: set[cst.FunctionDef] = set()
    pending = [info]
    recursive = False
    while pending:
        current = pending.pop()
        if current.node in seen:
            continue
        seen.add(current.node)
        where = "" if current is info else f" (in `{current.qualname}`)"
        effects.extend(effect + where for effect in body(current.node).effects)
        for callee in callees(current):
            if callee is info:
                recursive = True
            pending.append(callee)
    if effects:
        reasons.append(f"{HAS_PYTHON_SIDE_EFFECTS}: it " + "; ".join(dict.fromkeys(effects)))
    branches = []
    for current_node in seen:
        for test in body(current_node).tests:
            if _reads_value(test) or (
                current_node is function and types.decides_on_tensor_data(test)
            ):
                where = (
                    ""
                    if current_node is function
                    else f" (in `{functions[current_node].qualname}`)"
                )
                branches.append(f"`{code(test)}`{where}")
    reads = [
        read + ("" if current_node is function else f" (in `{functions[current_node].qualname}`)")
        for current_node in seen
        for read in body(current_node).data_reads
    ]
    if reads:
        reasons.append(
            f"{READS_TENSOR_DATA}: it reads tensor data into Python or a shape ("
            + ", ".join(dict.fromkeys(reads))
            + "), which breaks the graph"
        )
    if branches:
        reasons.append(
            f"{HAS_DATA_DEPENDENT_BRANCHES}: it branches on tensor data ("
            + ", ".join(dict.fromkeys(branches))
            + "), which breaks the graph"
        )
    if recursive:
        reasons.append(
            f"{IS_RECURSIVE}: `{function.name.value}` calls itself (directly or through "
            "other functions), which a graph cannot express"
        )

    params = function.params
    all_params = [*params.posonly_params, *params.params, *params.kwonly_params]
    if all_params and all_params[0].name.value in ("self", "cls") and info.class_name:
        all_params = all_params[1:]
    primitives = [p.name.value for p in all_params if _is_primitive(p, qualified_names)]
    if primitives:
        names = ", ".join(f"`{n}`" for n in primitives)
        reasons.append(
            f"{HAS_PRIMITIVE_PARAMETERS}: {names} would recompile the graph for every new value"
        )
    kinds = {p.name.value: types.env.get(p.name.value, Kind.UNKNOWN) for p in all_params}
    proven = [n for n, k in kinds.items() if k is Kind.TENSOR and n not in types.assumed]
    hinted = [n for n in kinds if n in types.assumed]
    unknown = [n for n, k in kinds.items() if k is Kind.UNKNOWN]
    if not proven:
        if SPECULATIVE_NAME.match(function.name.value) and (hinted or unknown):
            names = ", ".join(f"`{n}`" for n in (hinted or unknown))
            assumptions.append(
                f"assumed from naming conventions: `{function.name.value}` is taken to receive "
                f"tensors ({names}), because its parameters are not annotated"
            )
        elif hinted:
            names = ", ".join(f"`{n}`" for n in hinted)
            assumptions.append(f"{names} taken to be tensors because the body uses them as tensors")
        elif unknown:
            names = ", ".join(f"`{n}`" for n in unknown)
            reasons.append(
                f"{UNDETERMINABLE_TENSOR_PARAMETERS}: cannot tell whether {names} "
                "are tensors (annotate them with torch.Tensor)"
            )
        else:
            reasons.append(
                f"{NO_TENSOR_PARAMETERS}: no parameter is a tensor, so there is no graph to compile"
            )
    return Verdict(reasons, assumptions)


def _primitive_annotation(annotation: cst.BaseExpression, qualified_names) -> bool:
    """``int``, ``float | None``, ``Optional[int]``, ``Union[float, int]``: a Python value."""
    names = qualified_names(annotation)
    if isinstance(annotation, cst.Name):
        names = names | {annotation.value}
    if names & PRIMITIVE_ANNOTATIONS:
        return True
    members = union_members(annotation, names)
    return members is not None and any(
        not is_none(m) and _primitive_annotation(m, qualified_names) for m in members
    )


def _reads_value(test: cst.BaseExpression) -> bool:
    """Whether ``test`` reads a tensor's value into Python (``x.sum().item() > 0``)."""
    found = False

    class _Reads(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            nonlocal found
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in ("item", "tolist", "numpy"):
                found = True

    fast_visit(test, _Reads())
    return found


def loggers_in(assignments, qualified_names, code) -> frozenset[str]:
    """Names bound to a logger by ``assignments`` (``log = logging.getLogger(…)``,
    ``self.logger = logging.get_logger(…)``), as spelled; the rule finds them once per file."""
    found: set[str] = set()
    for node in assignments:
        value = node.value
        if isinstance(value, cst.Call) and any(
            n.endswith(LOGGER_FACTORIES) for n in qualified_names(value.func) | {code(value.func)}
        ):
            found.update(code(target.target) for target in node.targets)
    return frozenset(found)


def _is_primitive(param: cst.Param, qualified_names) -> bool:
    if param.annotation is not None:
        return _primitive_annotation(param.annotation.annotation, qualified_names)
    default = param.default
    if isinstance(default, cst.Name):
        return default.value in ("True", "False")
    return isinstance(default, (cst.BaseNumber, cst.BaseString))
