"""What a rule sees of the file being linted, and how its reports become findings.

One :class:`RuleContext` per lint run holds the parsed module, its metadata,
the compiled regions and the suppression comments; ``Rule.report`` lands in
:meth:`RuleContext.add_finding`, which turns the rule's node replacements into
a :class:`~fullgraph.refactors.findings.Fix` of minimal text edits.
"""

from __future__ import annotations

import ast
import logging
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING

import libcst as cst
import libcst.metadata as meta
from libcst.helpers import get_full_name_for_node

from .analyses.bindings import names_in
from .analyses.layers import Layer, class_layers
from .analyses.regions import FunctionInfo, find_functions
from .analyses.tensor_types import TensorTypes
from .fast_tree import LazyPositions, LazyQualifiedNames, fast_visit, parent_map
from .findings import Finding, Fix, Severity
from .imports import ensure_import, module_reference
from .suppression import find_suppressions, is_suppressed
from .text_edits import diff_edits

if TYPE_CHECKING:
    from .rule import Replacement, Rule

try:  # libcst >= 1.2 resolves some metadata lazily; visitors unwrap it, a plain resolve() does not.
    from libcst._metadata_dependent import LazyValue
except ImportError:  # pragma: no cover - older libcst
    LazyValue = ()

logger = logging.getLogger(__name__)


class _Metadata:
    """One provider's resolved metadata, unwrapping lazy values on read."""

    def __init__(self, mapping) -> None:
        self._mapping = mapping

    def get(self, node, default=None):
        value = self._mapping.get(node, default)
        return value() if LazyValue and isinstance(value, LazyValue) else value

    def __getitem__(self, node):
        value = self._mapping[node]
        return value() if LazyValue and isinstance(value, LazyValue) else value


class Replace(cst.CSTTransformer):
    """Swap nodes by identity; the map's keys are nodes of the metadata wrapper's module."""

    def __init__(self, changes: dict[cst.CSTNode, Replacement]) -> None:
        super().__init__()
        self.changes = changes

    def on_leave(self, original_node, updated_node):
        if original_node in self.changes:
            replacement = self.changes[original_node]
            # A callable edits the node as updated by the changes inside it (a decorator
            # added to a function whose calls other changes rewrite).
            return replacement(updated_node) if callable(replacement) else replacement
        return updated_node


_PLAIN_DECORATORS = frozenset(
    {"staticmethod", "torch.no_grad", "torch.inference_mode", "torch.enable_grad"}
)


def _returns_only_tensors(function: cst.FunctionDef, context: RuleContext) -> bool:
    for decorator in function.decorators:
        target = decorator.decorator
        target = target.func if isinstance(target, cst.Call) else target
        # ``@torch.no_grad()``: an Attribute's ``value`` is a node, its spelling is the name.
        names = context.qualified_names(target) | {get_full_name_for_node(target) or ""}
        if not names & _PLAIN_DECORATORS and not any("defer_side_effects" in n for n in names):
            return False  # a decorator may return anything
    returns: list[cst.Return] = []
    generator = False

    class _Returns(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is function

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return False

        def visit_Return(self, node: cst.Return) -> None:
            returns.append(node)

        def visit_Yield(self, node: cst.Yield) -> None:
            nonlocal generator
            generator = True

    fast_visit(function, _Returns())
    if generator or not returns or function not in context.functions:
        return False
    types = context.tensor_types(function)
    return all(r.value is not None and types.is_tensor(r.value) for r in returns)


def rewrite(
    module: cst.Module,
    changes: dict[cst.CSTNode, Replacement],
    imports: Sequence[str],
    parent: Callable[[cst.CSTNode], cst.CSTNode | None] | None = None,
) -> str:
    """The source of ``module`` with ``changes`` made and ``imports`` added (each once).

    With ``parent`` (the module's parent map), only the top-level statements that
    hold a change are rebuilt: a whole-module transform of a 20,000-line file takes
    seconds for a one-line fix.
    """
    touched = _statements_holding(module, changes, parent) if parent is not None else None
    if touched is None:
        module = module.visit(Replace(changes))
    else:
        transformer = Replace(changes)
        module = module.with_changes(
            body=[
                statement.visit(transformer) if statement in touched else statement
                for statement in module.body
            ]
        )
    for dotted in dict.fromkeys(imports):
        module = ensure_import(module, dotted)
    new_source = module.code
    # The rewrite must still be Python (CPython's parser is the judge, and fast).
    ast.parse(new_source)
    return new_source


def _statements_holding(
    module: cst.Module,
    changes: dict[cst.CSTNode, Replacement],
    parent: Callable[[cst.CSTNode], cst.CSTNode | None],
) -> set[cst.CSTNode] | None:
    """The top-level statements of ``module`` that hold the changed nodes (None: unknown)."""
    top = {id(statement): statement for statement in module.body}
    touched: set[cst.CSTNode] = set()
    for node in changes:
        current = node
        while id(current) not in top:
            current = parent(current)
            if current is None:
                return None  # not a node of this module's tree
        touched.add(top[id(current)])
    return touched


class RuleContext:
    def __init__(
        self,
        source: str,
        path: str,
        wrapper: meta.MetadataWrapper,
        entrypoints: Collection[str] = (),
    ) -> None:
        self.source = source
        self.path = path
        self.wrapper = wrapper
        self.module = wrapper.module
        self._metadata: dict[type, _Metadata] = {}
        # Parents and qualified names without libcst's whole-tree visitors (fast_tree.py):
        # together they were a third of a whole-file lint.
        self._metadata[meta.ParentNodeProvider] = _Metadata(parent_map(self.module))
        scopes = self._resolve(meta.ScopeProvider)
        self._metadata[meta.QualifiedNameProvider] = _Metadata(LazyQualifiedNames(scopes))
        self._parents = self._resolve(meta.ParentNodeProvider)
        self._qualified = self._resolve(meta.QualifiedNameProvider)
        self.functions: dict[cst.FunctionDef, FunctionInfo] = find_functions(
            self.module, self.qualified_names, entrypoints
        )
        self.suppressions = find_suppressions(source)
        self.findings: list[Finding] = []
        self._types: dict[tuple[cst.FunctionDef, bool, bool], TensorTypes] = {}
        self._walks: dict = {}
        # Module-wide facts, each found once per lint when first asked.
        self._module_names: set[str] | None = None
        self._module_references: dict[str, str] = {}
        self._by_class_and_name: dict[tuple[str | None, str], list[cst.FunctionDef]] | None = None
        self._returns: dict[cst.FunctionDef, bool | None] = {}
        self._classes: list[cst.ClassDef] | None = None
        self._derived: dict[str | None, list[cst.ClassDef]] | None = None
        self._class_layers: dict[cst.ClassDef, dict[str, Layer]] = {}
        self._class_attributes: dict = {}
        # Only the findings' nodes need a range: placed one top-level statement at a time.
        self._metadata[meta.PositionProvider] = _Metadata(
            LazyPositions(wrapper, source, self._parents)
        )
        self._positions = self._resolve(meta.PositionProvider)

    # -- queries used by rules ----------------------------------------------

    def _resolve(self, provider) -> _Metadata:
        # ``wrapper.resolve`` copies its whole mapping on every call; resolve each provider once.
        if provider not in self._metadata:
            self._metadata[provider] = _Metadata(self.wrapper.resolve(provider))
        return self._metadata[provider]

    def get_metadata(self, provider, node, default=None):
        return self._resolve(provider).get(node, default)

    def qualified_names(self, node: cst.CSTNode) -> set[str]:
        return {q.name for q in self._qualified.get(node, set())}

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self._parents.get(node)

    def enclosing_function(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        current = self._parents.get(node)
        while current is not None and not isinstance(current, cst.FunctionDef):
            if isinstance(current, (cst.Lambda, cst.ClassDef)):
                return None
            current = self._parents.get(current)
        return current

    def tensor_function(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        """The function around ``node`` whose tensor code the rules check (None: leave it).

        Methods of a ``torch.autograd.Function`` are left alone: ``backward`` runs in the
        autograd engine, and their conditions are mostly Python flags.
        """
        function = self.enclosing_function(node)
        info = self.functions.get(function) if function is not None else None
        if info is None or info.in_autograd_function:
            return None
        return function

    def function_info(self, node: cst.CSTNode) -> FunctionInfo | None:
        function = node if isinstance(node, cst.FunctionDef) else self.enclosing_function(node)
        return self.functions.get(function) if function is not None else None

    def tensor_types(
        self, function: cst.FunctionDef, *, likely: bool = False, optional: bool = False
    ) -> TensorTypes:
        """Tensor kinds in ``function``; ``likely`` ones are for reporting, strict ones for fixes.

        ``optional``: strict kinds that also count ``Optional[torch.Tensor]`` names as
        tensors, for a fix that evaluates the code exactly where it stands.
        """
        key = (function, likely, optional)
        if key not in self._types:
            info = self.functions[function]
            is_forward = info.in_module_class and function.name.value == "forward"
            self._types[key] = TensorTypes(
                function,
                self.get_metadata,
                is_forward=is_forward,
                likely=likely,
                submodules=info.submodules,
                buffers=info.buffers,
                returns_tensor=lambda func, caller=function: self.call_returns_tensor(caller, func),
                walks=self._walks,
                optional_tensors=optional,
            )
        return self._types[key]

    # -- what functions of this file return -----------------------------------

    def call_returns_tensor(self, caller: cst.FunctionDef, func: cst.BaseExpression) -> bool:
        """Whether calling ``func`` from ``caller`` runs a function of this file that returns a tensor.

        ``f(...)`` for a module-level ``f``, ``self.m(...)`` for a method of the caller's
        class, ``self.loss(...)`` for ``self.loss = f``; every ``return`` of the callee
        must be a tensor by the strict kinds (a subclass in another file that overrides
        the method is not seen).
        """
        targets = self._call_targets(caller, func)
        return bool(targets) and all(self._returns_tensor(target) for target in targets)

    def _call_targets(self, caller: cst.FunctionDef, func: cst.BaseExpression) -> list:
        info = self.functions.get(caller)
        if info is None:
            return []
        index = self._by_class_and_name
        if index is None:
            index = self._by_class_and_name = {}
            for function, function_info in self.functions.items():
                if "<locals>" not in function_info.qualname:
                    key = (function_info.class_name, function.name.value)
                    index.setdefault(key, []).append(function)
        if isinstance(func, cst.Name):
            return index.get((None, func.value), [])
        if (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
            and info.class_name is not None
        ):
            attr = func.attr.value
            methods = index.get((info.class_name, attr))
            if methods:
                return methods
            return [
                f
                for name in info.function_attributes.get(attr, ())
                for f in index.get((None, name), [])
            ]
        return []

    def _returns_tensor(self, function: cst.FunctionDef) -> bool:
        cache = self._returns
        if function in cache:
            return bool(cache[function])  # None while it is being found: a cycle, so no
        cache[function] = None
        cache[function] = _returns_only_tensors(function, self)
        return cache[function]

    def module_nodes(self, node_type: type) -> list[cst.CSTNode] | None:
        """Every ``node_type`` node of ``module``, in no particular order (None: walk it).

        Read from the parent map, which holds every node but the module: a libcst walk
        of the whole module for each such question was a large part of a lint.  None
        when ``module`` is not the tree the map was made from (a partial module's fix).
        """
        if self.module is not self.wrapper.module:
            return None
        return [node for node in self._parents._mapping if isinstance(node, node_type)]

    def module_names(self) -> set[str]:
        """The variable names used anywhere in ``module`` (``names_in(module)``), once per lint."""
        found = self._module_names
        if found is None:
            names = self.module_nodes(cst.Name)
            if names is None:
                found = names_in(self.module)
            else:
                parents = self._parents
                found = set()
                for name in names:
                    parent = parents.get(name)
                    # ``x.y``: only ``x`` is a variable (names_in skips the attribute).
                    if not (isinstance(parent, cst.Attribute) and parent.attr is name):
                        found.add(name.value)
            self._module_names = found
        return found

    # -- the classes of the file ------------------------------------------------

    def classes(self) -> list[cst.ClassDef]:
        """Every class of the file, found once per lint (one walk, not one per class)."""
        if self._classes is None:
            classes = self.module_nodes(cst.ClassDef)
            if classes is None:
                classes = []

                class _Classes(cst.CSTVisitor):
                    def visit_ClassDef(self, node: cst.ClassDef) -> None:
                        classes.append(node)

                fast_visit(self.module, _Classes())
            self._classes = classes
        return self._classes

    def subclasses(self, class_def: cst.ClassDef) -> list[cst.ClassDef]:
        """Classes of this file derived from ``class_def``, directly or not (by base name)."""
        # base name -> the classes naming it as a base, built once per lint: asking every
        # class about every other made a file of many classes quadratic.
        derived = self._derived
        if derived is None:
            derived = self._derived = {}
            for candidate in self.classes():
                for arg in candidate.bases:
                    derived.setdefault(get_full_name_for_node(arg.value), []).append(candidate)
        names, found, seen = [class_def.name.value], [], {class_def}
        while names:
            for candidate in derived.get(names.pop(), ()):
                if candidate not in seen:
                    seen.add(candidate)
                    found.append(candidate)
                    names.append(candidate.name.value)
        return found  # in no particular order: class_layers takes their union

    def class_layers(self, function: cst.FunctionDef) -> dict[str, Layer]:
        """The torch.nn layers of the class whose method ``function`` is (empty elsewhere)."""
        block = self.parent(function)
        class_def = self.parent(block) if block is not None else None
        if not isinstance(class_def, cst.ClassDef):
            return {}
        if class_def not in self._class_layers:
            self._class_layers[class_def] = class_layers(
                class_def,
                self.qualified_names,
                self.code,
                self.subclasses(class_def),
                attributes=self._class_attributes,
            )
        return self._class_layers[class_def]

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def module_reference(self, dotted: str) -> str:
        """How a fix spells module ``dotted`` here; list it in ``imports`` of the report."""
        # Read from the module's imports once per lint, not once per fix.
        references = self._module_references
        if dotted not in references:
            references[dotted] = module_reference(self.module, dotted)
        return references[dotted]

    # -- reports --------------------------------------------------------------

    def add_finding(
        self,
        rule: Rule,
        node: cst.CSTNode,
        message: str,
        *,
        changes: dict[cst.CSTNode, Replacement] | None,
        imports: Sequence[str],
        fix_title: str | None,
        refusal_reason: str | None,
        severity: Severity | None,
    ) -> None:
        position = self._positions[node]
        line, column = position.start.line, position.start.column
        if is_suppressed(self.suppressions, line, rule.CODE):
            return
        if severity is None:
            info = self.function_info(node)
            severity = rule.SEVERITY if info is not None and info.region_reason else "hint"
        fix = None
        if changes:
            fix = self._build_fix(changes, imports, fix_title or f"Fix {rule.CODE}: {rule.NAME}")
            if fix is None:
                refusal_reason = refusal_reason or "the rewrite could not be built"
        self.findings.append(
            Finding(
                rule.CODE,
                message,
                line,
                column,
                position.end.line,
                position.end.column,
                severity,
                fix,
                refusal_reason,
            )
        )

    def _build_fix(
        self, changes: dict[cst.CSTNode, Replacement], imports: Sequence[str], title: str
    ) -> Fix | None:
        return Fix(
            title,
            build=lambda: self._fix_edits(changes, imports, title),
            changes=changes,
            imports=tuple(imports),
        )

    def _fix_edits(
        self, changes: dict[cst.CSTNode, Replacement], imports: Sequence[str], title: str
    ) -> list:
        # A fix is a result, never an exception: a rule bug costs the fix, not the lint run.
        try:
            new_source = rewrite(self.module, changes, imports, self.parent)
        except Exception:
            logger.exception("could not build the fix %r", title)
            return []
        return diff_edits(self.source, new_source)
