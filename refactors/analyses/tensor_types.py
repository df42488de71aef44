"""A small, conservative guess of which expressions in a function are tensors.

Static rules need to know whether ``x.sum() > 0`` compares a tensor (a graph
break when it decides an ``if``) or a number (harmless).  Without running the
code that is a guess, so the answer has three values and rules only act on
``TENSOR``:

- parameters annotated ``torch.Tensor`` are tensors; unannotated parameters of
  an ``nn.Module.forward`` are assumed tensors (the usual convention); other
  unannotated parameters are tensors when the body passes them to ``torch.*``
  or calls a tensor method on them;
- ``torch.*`` calls return tensors except for a known list that returns Python
  values (``torch.equal``, ``torch.is_tensor`` …);
- methods and operators on tensors return tensors, except metadata
  (``.shape``, ``.size()``, ``.dim()`` …) and value reads (``.item()`` …);
- ``self.<layer>(…)`` returns a tensor when the class builds ``<layer>`` from
  a known ``torch.nn`` layer.

The names behind these facts live in :mod:`fullgraph.refactors.analyses.torch_facts`.
A *likely* instance (``likely=True``) also takes submodule results and
``.item()`` receivers for tensors: rules report with it and fix with the
strict one.
"""

from __future__ import annotations

import libcst as cst

from ..fast_tree import fast_visit
from .annotations import OPTIONAL, annotation_kind, annotations_in
from .tensor_kinds import Kind, is_metadata_read, qualified_names, torch_call_kind
from .torch_facts import (
    DATA_DEPENDENT_BOOL_METHODS,
    DATA_DEPENDENT_BOOL_TORCH,
    EFFECTFUL_TENSOR_MODULES,
    METADATA_ATTRIBUTES,
    METADATA_METHODS,
    NON_TENSOR_MEMBER_PREFIXES,
    PURE_TENSOR_MODULES,
    SIZE_TAKING_TORCH,
    TENSOR_ATTRIBUTES,
    TENSOR_HINT_METHODS,
    TUPLE_METHODS,
    VALUE_READ_BUILTINS,
    VALUE_READ_METHODS,
)


class _Assignments(cst.CSTVisitor):
    """Name -> assigned values in one function body, not looking into nested scopes."""

    def __init__(self) -> None:
        super().__init__()
        self.values: dict[str, list[cst.BaseExpression | None]] = {}
        self.depth = 0

    def _add(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if isinstance(target, cst.Name):
            self.values.setdefault(target.value, []).append(value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._add(element.value, None)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.depth += 1
        return self.depth == 1

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.depth -= 1

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._add(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._add(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._add(node.target, cst.BinaryOperation(node.target, cst.Add(), node.value))

    def visit_For(self, node: cst.For) -> None:
        self._add(node.target, None)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._add(node.asname.name, None)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._add(node.target, node.value)


# A ``forward`` parameter is taken to be a tensor by convention, but not one named like
# a switch (``output_attentions``, ``interpolate_pos_encoding``, ``return_dict``): on real
# code those are Python bools, and an `if` on one is no break (squeezebert, maskformer).
FLAG_PREFIXES = (
    "output_", "return_", "use_", "interpolate_", "is_", "has_", "do_", "skip_",
    "apply_", "enable_", "with_", "training",
)  # fmt: skip
# Nor one named like one size (``inputs_shape``, ``batch_size``): a tuple or an int, and
# ``int(self.padding_idx + inputs_shape[1])`` reads no tensor (prophetnet).  Plurals stay
# tensors (``spatial_shapes``, ``image_sizes`` hold one row per item).
SIZE_NAMES = ("shape", "size")
SIZE_SUFFIXES = ("_shape", "_size")


def _named_like_a_flag_or_size(name: str) -> bool:
    return name.startswith(FLAG_PREFIXES) or name in SIZE_NAMES or name.endswith(SIZE_SUFFIXES)


class TensorTypes:
    """Kinds of the expressions of one function."""

    def __init__(
        self,
        function: cst.FunctionDef,
        get_metadata,
        *,
        is_forward: bool,
        likely: bool = False,
        submodules: dict[str, str] | None = None,
        buffers: frozenset[str] = frozenset(),
        returns_tensor=None,
        walks: dict | None = None,
        optional_tensors: bool = False,
    ) -> None:
        # Parameters and variables annotated ``Optional[torch.Tensor]`` / ``torch.Tensor |
        # None`` are tensors in ``likely`` kinds and, with ``optional_tensors``, in strict
        # ones too: right where the code is evaluated as it stands (a check of an assert's
        # own condition), wrong in a branch a rewrite would run when it was not taken.
        self.optional_tensors = optional_tensors or likely
        self.optional: set[str] = set()
        # ``walks``: what the walks of a function found, shared by the strict and the
        # likely kinds of one function (the rule context keeps one per lint run).
        self._walks = walks if walks is not None else {}
        # ``returns_tensor(func)``: whether a call of ``func`` (a function or method of
        # this file) provably returns a tensor; given by the rule context.
        self._returns_tensor = returns_tensor
        # ``self.<name>`` the class registers as a buffer (``register_buffer``): a tensor.
        self.buffers = buffers
        # ``self.<attr>`` -> the torch.nn class it was built from, for calls like self.proj(x).
        self.submodules = submodules or {}
        # ``likely`` also counts results of submodule calls (``self.proj(x)``) and receivers
        # of ``.item()`` as tensors: good enough to report, never enough to rewrite.
        self.likely = likely
        self._get_metadata = get_metadata
        self.function = function
        self.assumed: set[str] = set()
        self.env: dict[str, Kind] = {}
        assigned = self._walks.get(("assigned", function))
        if assigned is None:
            collector = _Assignments()
            fast_visit(function, collector)
            assigned = self._walks[("assigned", function)] = collector.values
        self.assigned = assigned
        self._init_parameters(is_forward)
        # A small fixpoint: names start PENDING and take the join of the kinds of the
        # values assigned to them; loops assign names from names assigned below.
        for name in assigned:
            if name not in self.parameters:
                self.env[name] = Kind.PENDING
        for _ in range(6):
            changed = False
            for name, values in assigned.items():
                kinds = {self.kind(v) if v is not None else Kind.UNKNOWN for v in values}
                if name in self.parameters:
                    kinds.add(self._parameter_kinds[name])
                kinds.discard(Kind.PENDING)
                new = (
                    Kind.PENDING if not kinds else kinds.pop() if len(kinds) == 1 else Kind.UNKNOWN
                )
                changed = changed or new is not self.env.get(name)
                self.env[name] = new
            if not changed:
                break
        for name, kind in self.env.items():
            if kind is Kind.PENDING:
                self.env[name] = Kind.UNKNOWN
        # ``h: torch.Tensor = …`` declares what ``h`` holds: proof of a tensor whatever the
        # value's kind, unless another annotation of ``h`` says otherwise.
        annotated = self._walks.get(("annotated", function))
        if annotated is None:
            annotated = self._walks[("annotated", function)] = annotations_in(function)
        for name, declared in annotated.items():
            if name in self.parameters:
                continue
            kinds = {self.annotation_kind(a) for a in declared}
            if len(kinds) != 1:
                continue
            kind = kinds.pop()
            if kind == OPTIONAL:
                self.optional.add(name)
                if self.optional_tensors:
                    self.env[name] = Kind.TENSOR
            elif kind is not Kind.UNKNOWN:
                self.env[name] = kind

    def _init_parameters(self, is_forward: bool) -> None:
        params = self.function.params
        all_params = [*params.posonly_params, *params.params, *params.kwonly_params]
        self.parameters = {p.name.value: p for p in all_params}
        for p in (params.star_arg, params.star_kwarg):
            if isinstance(p, cst.Param):
                self.env[p.name.value] = Kind.NOT_TENSOR
        hinted = self._names_used_as_tensors()
        for index, param in enumerate(all_params):
            name = param.name.value
            self.env[name] = self.parameter_kind(param, index, is_forward, name in hinted)
        self._parameter_kinds = dict(self.env)

    def parameter_kind(self, param: cst.Param, index: int, is_forward: bool, hinted: bool) -> Kind:
        name = param.name.value
        if index == 0 and name in ("self", "cls"):
            return Kind.NOT_TENSOR
        if param.annotation is not None:
            kind = self.annotation_kind(param.annotation.annotation)
            if kind == OPTIONAL:
                self.optional.add(name)
                return Kind.TENSOR if self.optional_tensors else Kind.UNKNOWN
            return kind
        default = param.default
        if isinstance(default, cst.Name) and default.value in ("True", "False"):
            return Kind.NOT_TENSOR
        if isinstance(default, cst.Name) and default.value == "None":
            return Kind.UNKNOWN  # Optional: a tensor or nothing, so neither is assumed
        if default is not None and not isinstance(default, cst.Name):
            return Kind.NOT_TENSOR
        if hinted or (is_forward and not _named_like_a_flag_or_size(name)):
            self.assumed.add(name)
            return Kind.TENSOR
        return Kind.UNKNOWN

    def annotation_kind(self, annotation: cst.BaseExpression) -> Kind | str:
        """What ``annotation`` says (:func:`~.annotations.annotation_kind`) in this function."""
        return annotation_kind(annotation, self._get_metadata)

    def _names_used_as_tensors(self) -> set[str]:
        key = ("hinted", self.function)
        if key not in self._walks:
            self._walks[key] = self._find_names_used_as_tensors()
        return self._walks[key]

    def _find_names_used_as_tensors(self) -> set[str]:
        hinted: set[str] = set()
        get_metadata = self._get_metadata

        class _Hints(cst.CSTVisitor):
            def visit_Call(self, node: cst.Call) -> None:
                func = node.func
                if (
                    isinstance(func, cst.Attribute)
                    and isinstance(func.value, cst.Name)
                    and func.attr.value in TENSOR_HINT_METHODS
                ):
                    hinted.add(func.value.value)
                names = qualified_names(get_metadata, func)
                # Arguments of module constructors and factories are sizes, and only the
                # first argument of an operator is surely a tensor (``F.pad(x, padding)``,
                # ``torch.clamp(x, low, high)``).
                first = node.args[0] if node.args else None
                if (
                    first is not None
                    and first.keyword is None
                    and not first.star
                    and isinstance(first.value, cst.Name)
                    and not names & SIZE_TAKING_TORCH
                    and torch_call_kind(names, node) is Kind.TENSOR
                ):
                    hinted.add(first.value.value)

        fast_visit(self.function.body, _Hints())
        return hinted

    def kind(self, node: cst.BaseExpression | None) -> Kind:
        if node is None:
            return Kind.UNKNOWN
        method = getattr(self, f"_kind_{type(node).__name__}", None)
        if method is not None:
            return method(node)
        if isinstance(
            node,
            (
                cst.BaseNumber,
                cst.BaseString,
                cst.Tuple,
                cst.List,
                cst.Dict,
                cst.Set,
                cst.ListComp,
                cst.DictComp,
                cst.SetComp,
            ),
        ):
            return Kind.NOT_TENSOR
        return Kind.UNKNOWN

    def is_tensor(self, node: cst.BaseExpression) -> bool:
        return self.kind(node) is Kind.TENSOR

    def _kind_Name(self, node: cst.Name) -> Kind:
        if node.value in ("None", "True", "False"):
            return Kind.NOT_TENSOR
        return self.env.get(node.value, Kind.UNKNOWN)

    def _kind_Attribute(self, node: cst.Attribute) -> Kind:
        attr = node.attr.value
        if attr in METADATA_ATTRIBUTES or attr.startswith(NON_TENSOR_MEMBER_PREFIXES):
            return Kind.NOT_TENSOR
        if isinstance(node.value, cst.Name) and node.value.value == "self" and attr in self.buffers:
            return Kind.TENSOR
        if attr in TENSOR_ATTRIBUTES:
            receiver = self.kind(node.value)
            if receiver in (Kind.TENSOR, Kind.PENDING):
                return receiver
        return Kind.UNKNOWN

    def _kind_Subscript(self, node: cst.Subscript) -> Kind:
        receiver = self.kind(node.value)
        if receiver in (Kind.TENSOR, Kind.PENDING):
            return receiver
        if is_metadata_read(node.value):
            return Kind.NOT_TENSOR
        return Kind.UNKNOWN

    def _kind_Call(self, node: cst.Call) -> Kind:
        func = node.func
        names = qualified_names(self._get_metadata, func)
        # A method of a call's result (``torch.tanh(x).sum``) is no torch function.
        root = func
        while isinstance(root, cst.Attribute):
            root = root.value
        torch_kind = torch_call_kind(names, node) if isinstance(root, cst.Name) else None
        if torch_kind is not None:
            return torch_kind
        if isinstance(func, cst.Attribute) and self.kind(func.value) is Kind.PENDING:
            return Kind.PENDING
        if isinstance(func, cst.Attribute) and self.is_tensor(func.value):
            method = func.attr.value
            if (
                method in METADATA_METHODS
                or method in VALUE_READ_METHODS
                or method in DATA_DEPENDENT_BOOL_METHODS
                or method.startswith(NON_TENSOR_MEMBER_PREFIXES)
            ):
                return Kind.NOT_TENSOR
            if method == "type" and not node.args:
                return Kind.NOT_TENSOR
            if method in TUPLE_METHODS and node.args:
                return Kind.UNKNOWN
            return Kind.TENSOR
        if self.submodule(func) in PURE_TENSOR_MODULES | EFFECTFUL_TENSOR_MODULES:
            return Kind.TENSOR
        if self._returns_tensor is not None and self._returns_tensor(func):
            return Kind.TENSOR
        if (
            self.likely
            and isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
        ):
            arguments = {self.kind(a.value) for a in node.args}
            if Kind.TENSOR in arguments:
                return Kind.TENSOR
            if Kind.PENDING in arguments:
                return Kind.PENDING
        if isinstance(func, cst.Name):
            if func.value in ("len", "isinstance", "int", "float", "bool", "str", "range"):
                return Kind.NOT_TENSOR
            if func.value == "abs" and node.args and self.is_tensor(node.args[0].value):
                return Kind.TENSOR
        return Kind.UNKNOWN

    @staticmethod
    def _combine(kinds: set[Kind]) -> Kind:
        """Operators on operands of these kinds: a tensor operand makes a tensor."""
        if Kind.TENSOR in kinds:
            return Kind.TENSOR
        if Kind.PENDING in kinds:
            return Kind.PENDING
        return Kind.NOT_TENSOR if kinds == {Kind.NOT_TENSOR} else Kind.UNKNOWN

    def submodule(self, func: cst.BaseExpression) -> str | None:
        """The torch.nn class of ``self.<attr>`` when ``func`` is that attribute."""
        if (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
        ):
            return self.submodules.get(func.attr.value)
        return None

    def _kind_BinaryOperation(self, node: cst.BinaryOperation) -> Kind:
        return self._combine({self.kind(node.left), self.kind(node.right)})

    def _kind_UnaryOperation(self, node: cst.UnaryOperation) -> Kind:
        if isinstance(node.operator, cst.Not):
            return Kind.NOT_TENSOR
        return self.kind(node.expression)

    def _kind_Comparison(self, node: cst.Comparison) -> Kind:
        if any(
            isinstance(t.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for t in node.comparisons
        ):
            return Kind.NOT_TENSOR
        operands = [node.left, *(t.comparator for t in node.comparisons)]
        if any(isinstance(o, (cst.BaseString, cst.Name)) and self._is_text(o) for o in operands):
            # Comparing with a string is a Python bool (``group[0] == "tpu"``).
            return Kind.NOT_TENSOR
        kinds = {self.kind(node.left)} | {self.kind(t.comparator) for t in node.comparisons}
        if Kind.TENSOR in kinds and any(self._is_size(o) for o in operands):
            tensors = [o for o in operands if self.kind(o) is Kind.TENSOR]
            if all(isinstance(o, cst.Name) and o.value in self.assumed for o in tensors):
                # ``norms.size()[1] == C``: compared with a size, a parameter only assumed
                # to be a tensor (the forward convention) is more likely an int.
                return Kind.UNKNOWN
        return self._combine(kinds)

    def _is_size(self, node: cst.BaseExpression) -> bool:
        """A Python int read from a tensor's metadata (``x.shape[1]``, ``x.dim()``, ``len(x)``)."""
        if isinstance(node, cst.Subscript):
            return is_metadata_read(node.value)
        if isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Name):
                return func.value == "len"
            return (
                isinstance(func, cst.Attribute)
                and func.attr.value in METADATA_METHODS
                and func.attr.value not in ("size", "stride", "type")
                or (
                    isinstance(func, cst.Attribute)
                    and func.attr.value in ("size", "stride")
                    and bool(node.args)
                )
            )
        return isinstance(node, cst.Attribute) and node.attr.value == "ndim"

    def _is_text(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.BaseString):
            return True
        values = self.assigned.get(node.value, []) if isinstance(node, cst.Name) else []
        return bool(values) and all(isinstance(v, cst.BaseString) for v in values)

    def _kind_IfExp(self, node: cst.IfExp) -> Kind:
        kinds = {self.kind(node.body), self.kind(node.orelse)}
        return kinds.pop() if len(kinds) == 1 else Kind.UNKNOWN

    # -- data dependence --------------------------------------------------

    def value_reads(self, node: cst.BaseExpression) -> list[cst.Call]:
        """Calls inside ``node`` that move tensor data into Python (``.item()``, ``int(t)`` …)."""
        reads: list[cst.Call] = []
        types = self

        class _Reads(cst.CSTVisitor):
            def visit_Lambda(self, node: cst.Lambda) -> bool:
                return False

            def visit_Call(self, call: cst.Call) -> None:
                func = call.func
                receiver_ok = (
                    (
                        types.kind(func.value) is not Kind.NOT_TENSOR
                        if types.likely
                        else types.is_tensor(func.value)
                    )
                    if isinstance(func, cst.Attribute)
                    else False
                )
                if (
                    isinstance(func, cst.Attribute)
                    and func.attr.value in VALUE_READ_METHODS
                    and receiver_ok
                ) or (
                    isinstance(func, cst.Name)
                    and func.value in VALUE_READ_BUILTINS
                    and len(call.args) == 1
                    and types.is_tensor(call.args[0].value)
                ):
                    reads.append(call)

        fast_visit(node, _Reads())
        return reads

    def decides_on_tensor_data(self, node: cst.BaseExpression) -> bool:
        """Whether Python's truth test of ``node`` reads tensor data."""
        if self.is_tensor(node):
            return True
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            return self.decides_on_tensor_data(node.expression)
        if isinstance(node, cst.BooleanOperation):
            return self.decides_on_tensor_data(node.left) or self.decides_on_tensor_data(node.right)
        if isinstance(node, cst.Call):
            func = node.func
            if (
                isinstance(func, cst.Attribute)
                and func.attr.value in DATA_DEPENDENT_BOOL_METHODS
                and self.is_tensor(func.value)
            ):
                return True
            return bool(qualified_names(self._get_metadata, func) & DATA_DEPENDENT_BOOL_TORCH)
        return False
