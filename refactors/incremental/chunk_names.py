"""The names through which a top-level chunk and the rest of its module see each other.

:func:`chunk_names` walks a chunk's statements with :mod:`ast` once and records
what it binds at module level (plus every ``def`` and ``class`` name), what it
uses, which functions it defines and calls, its classes and their bases, and,
for a chunk of plain imports, how each name is imported.
:class:`~fullgraph.refactors.incremental.chunking.DependencyIndex` builds the
dependencies between chunks from these.  Every set over-approximates what the
rules read (any identifier counts as a use).
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Iterable, Sequence

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclasses.dataclass(frozen=True)
class ChunkNames:
    """The names through which a chunk and the rest of the module see each other."""

    # Bound at module level (assignments, imports, ``global``), and every class name and
    # every name of a function that is no method (regions.py calls them by name from
    # anywhere, nested ones too); methods are in ``methods``.
    binds: frozenset[str]
    # The identifiers the chunk mentions (but names local to their function),
    # ``self.<attribute>`` names and its class names.
    uses: frozenset[str]
    # Functions defined at any depth (a call by name reaches all of them).
    defines: frozenset[str]
    # Names called as ``f(...)`` or ``self.f(...)`` (how regions.py builds the call tree).
    calls: frozenset[str]
    # Whether a function here may start a compiled region by itself: it is decorated
    # (a compile decorator or not) or named ``forward``; configured entrypoints aside.
    may_compile: bool = False
    # Classes defined at any depth, and the identifiers in their bases: FG101 looks for
    # the subclasses of a class anywhere in the file (by base name).
    classes: frozenset[str] = frozenset()
    base_names: frozenset[str] = frozenset()
    # ``from m import *`` binds names nobody can list: every chunk depends on it.
    star_import: bool = False
    # For a chunk of plain imports only: each bound name -> how it is imported. Other
    # chunks depend on such a chunk only through the bindings of the names they use.
    imports: tuple[tuple[str, tuple], ...] | None = None
    # Each function as regions.py resolves calls to it: (its class, or None for a plain
    # or nested function; its name; the names it calls itself).
    functions: tuple[tuple[str | None, str, frozenset[str]], ...] = ()
    # ``self.<attribute> = f`` (or ``partial(f, ...)``) in a method of a class:
    # (class, attribute, f); a call of ``self.<attribute>`` there reaches ``f``.
    function_attributes: frozenset[tuple[str, str, str]] = frozenset()
    # (class, name) of each method: reached by name only from its own class.
    methods: frozenset[tuple[str, str]] = frozenset()
    # ``self.<attribute>`` read where no class owns ``self`` (a plain function, or one
    # nested in a method, whose ``self`` the rules may take for the method's class): it
    # may be any class's method.
    loose_attributes: frozenset[str] = frozenset()

    def bindings(self, names: frozenset[str] | set[str]) -> tuple:
        """What another chunk that uses ``names`` can see of this import chunk."""
        return tuple(binding for binding in self.imports or () if binding[0] in names)


class _NameCollector(ast.NodeVisitor):
    """Walks a chunk's statements; ``depth`` counts the function/class scopes entered.

    A name local to the function it is used in (or to an enclosing one) is no
    use of a module-level name, so ``x`` in every method does not tie every
    chunk to a module-level ``x``.  Locals are only the bindings that libcst's
    scope analysis also counts (not ``del``, not comprehension targets).
    """

    def __init__(self) -> None:
        self.binds: set[str] = set()
        self.uses: set[str] = set()
        self.defines: set[str] = set()
        self.calls: set[str] = set()
        self.star_import = False
        self.imported: list[tuple[str, tuple]] = []
        self.may_compile = False
        self.classes: set[str] = set()
        self.base_names: set[str] = set()
        self.depth = 0
        self.locals: list[set[str]] = []  # one set per enclosing function
        # The enclosing classes and functions, innermost last, as regions.py sees them:
        # a class name, or the index of a function in ``functions``.
        self.owners: list[str | int] = []
        self.functions: list[tuple[str | None, str, set[str]]] = []
        self.function_attributes: set[tuple[str, str, str]] = set()
        self.methods: set[tuple[str, str]] = set()
        self.loose_attributes: set[str] = set()

    def _bind(self, name: str | None) -> None:
        if name is not None and self.depth == 0:
            self.binds.add(name)

    def _scoped(self, body: Iterable[ast.AST], local_names: set[str] | None = None) -> None:
        self.depth += 1
        if local_names is not None:
            self.locals.append(local_names)
        for node in body:
            self.visit(node)
        if local_names is not None:
            self.locals.pop()
        self.depth -= 1

    def visit_Name(self, node: ast.Name) -> None:
        if not any(node.id in scope for scope in self.locals):
            self.uses.add(node.id)
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self._bind(node.id)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.value, ast.Name) and node.value.id == "self":
            self.uses.add(node.attr)
            function = self._function_index()
            if function is None or self.functions[function][0] is None:
                self.loose_attributes.add(node.attr)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        called = None
        if isinstance(func, ast.Name):
            called = func.id
        elif (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
        ):
            called = func.attr
        if called is not None:
            self.calls.add(called)
            function = self._function_index()
            if function is not None:
                self.functions[function][2].add(called)
        self.generic_visit(node)

    def _function_index(self) -> int | None:
        """The innermost enclosing function (regions.py files a call under it), if any."""
        for owner in reversed(self.owners):
            if isinstance(owner, int):
                return owner
        return None

    def visit_Assign(self, node: ast.Assign) -> None:
        function = self._function_index()
        owner = self.functions[function][0] if function is not None else None
        if owner is not None:
            value = node.value
            if isinstance(value, ast.Call) and value.args:
                value = value.args[0]  # functools.partial(f, ...), or more: a superset
            if isinstance(value, ast.Name):
                for target in node.targets:
                    if (
                        isinstance(target, ast.Attribute)
                        and isinstance(target.value, ast.Name)
                        and target.value.id == "self"
                    ):
                        self.function_attributes.add((owner, target.attr, value.id))
        self.generic_visit(node)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.defines.add(node.name)
        self.may_compile = self.may_compile or bool(node.decorator_list) or node.name == "forward"
        # Decorators, defaults and annotations are evaluated in the enclosing scope.
        # As regions.py: a method's class is the innermost class when no function encloses
        # it (a class inside a function has none), and a call in its decorators, defaults
        # or annotations is the function's own.
        in_function = any(isinstance(owner, int) for owner in self.owners)
        owner = self.owners[-1] if self.owners and not in_function else None
        if owner is None:
            self.binds.add(node.name)
        else:
            self.methods.add((owner, node.name))
        self.functions.append((owner, node.name, set()))
        self.owners.append(len(self.functions) - 1)
        for part in [*node.decorator_list, *_defaults(node.args), node.returns]:
            if part is not None:
                self.visit(part)
        self._annotations(node)
        self._scoped(node.body, _function_locals(node))
        self.owners.pop()

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def _annotations(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        arguments = node.args
        for arg in [
            *arguments.posonlyargs,
            *arguments.args,
            *arguments.kwonlyargs,
            arguments.vararg,
            arguments.kwarg,
        ]:
            if arg is not None and arg.annotation is not None:
                self.visit(arg.annotation)
                self._string_names(arg.annotation)
        if node.returns is not None:
            self._string_names(node.returns)

    def _string_names(self, annotation: ast.expr) -> None:
        # libcst resolves names inside string annotations ("torch.Tensor") too.
        for node in ast.walk(annotation):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                self.uses.update(_IDENTIFIER.findall(node.value))

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.binds.add(node.name)
        self.classes.add(node.name)
        for base in node.bases:
            self.base_names.update(n.id for n in ast.walk(base) if isinstance(n, ast.Name))
        # Classes of the same name share their ``self.<attr>`` facts (regions.py keys by name).
        self.uses.add(node.name)
        for part in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
            self.visit(part)
        self.owners.append(node.name)
        self._scoped(node.body)
        self.owners.pop()

    def visit_Lambda(self, node: ast.Lambda) -> None:
        for part in _defaults(node.args):
            self.visit(part)
        self._scoped([node.body])

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._string_names(node.annotation)
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> None:
        # ``global x`` in a function binds ``x`` at module level.
        self.binds.update(node.names)
        self.uses.update(node.names)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self.uses.update(node.names)

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        for alias in node.names:
            if alias.name == "*":
                self.star_import = True
                continue
            bound = alias.asname or alias.name.split(".")[0]
            self._bind(bound)
            if isinstance(node, ast.Import):
                self.imported.append((bound, ("import", alias.name, alias.asname)))
            else:
                self.imported.append(
                    (bound, ("from", node.module, node.level, alias.name, alias.asname))
                )

    visit_Import = _import
    visit_ImportFrom = _import

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self.uses.add(node.name)
            self._bind(node.name)
        self.generic_visit(node)

    def _capture(self, node: ast.AST) -> None:
        for name in (getattr(node, "name", None), getattr(node, "rest", None)):
            if name:
                self.uses.add(name)
                self._bind(name)
        self.generic_visit(node)

    visit_MatchAs = _capture
    visit_MatchStar = _capture
    visit_MatchMapping = _capture


def _defaults(arguments: ast.arguments) -> list[ast.expr]:
    return [*arguments.defaults, *(d for d in arguments.kw_defaults if d is not None)]


# Nested scopes whose bindings are not the function's own.
_OTHER_SCOPES = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Lambda,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)


def _function_locals(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The names ``function`` binds itself: parameters, assignments, imports, nested defs."""
    arguments = function.args
    names = {
        arg.arg
        for arg in [
            *arguments.posonlyargs,
            *arguments.args,
            *arguments.kwonlyargs,
            arguments.vararg,
            arguments.kwarg,
        ]
        if arg is not None
    }
    declared_global: set[str] = set()
    pending: list[ast.AST] = list(function.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue
        if isinstance(node, _OTHER_SCOPES):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update(
                alias.asname or alias.name.split(".")[0]
                for alias in node.names
                if alias.name != "*"
            )
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.Global):
            declared_global.update(node.names)
        pending.extend(ast.iter_child_nodes(node))
    return names - declared_global


def chunk_names(statements: Sequence[ast.stmt]) -> ChunkNames:
    collector = _NameCollector()
    for statement in statements:
        collector.visit(statement)
    only_imports = not collector.star_import and all(
        isinstance(statement, (ast.Import, ast.ImportFrom)) for statement in statements
    )
    return ChunkNames(
        frozenset(collector.binds),
        frozenset(collector.uses),
        frozenset(collector.defines),
        frozenset(collector.calls),
        collector.may_compile,
        frozenset(collector.classes),
        frozenset(collector.base_names),
        collector.star_import,
        tuple(sorted(collector.imported)) if only_imports else None,
        tuple((owner, name, frozenset(calls)) for owner, name, calls in collector.functions),
        frozenset(collector.function_attributes),
        frozenset(collector.methods),
        frozenset(collector.loose_attributes),
    )
