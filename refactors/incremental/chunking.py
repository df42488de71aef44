"""A module cut into top-level chunks, and which chunks a chunk's findings depend on.

The incremental linter (:mod:`fullgraph.refactors.incremental.linter`) lints a file
one top-level statement at a time, so that an edit re-lints only what it
touched.  This module does the cheap part with :mod:`ast` (a whole-file
``ast.parse`` costs a few percent of a libcst pass):

- :func:`split_chunks` cuts the source into chunks: a chunk starts on the
  first line of a top-level statement (its first decorator for a ``def`` or
  ``class``) and runs up to the next chunk, so the blank and comment lines
  between two statements belong to the one above.  Statements that share a
  line (``a = 1; b = 2``) stay in one chunk.  After an edit, :func:`rechunk`
  parses only the chunks the edit changed.
- :class:`ChunkNames` records, per chunk, the names through which the rules
  see other chunks: what it binds at module level (plus every ``def`` and
  ``class`` name), what it uses, which functions it defines and calls.
- :meth:`DependencyIndex.needed` says which chunks must be linted together
  with a chunk for its findings to be exactly those of a whole-file lint: the
  callers of its functions that may be compiled, transitively (they decide
  whether a function is compiled), the subclasses of its classes, and then
  everything those chunks use, transitively (imports and other module-level
  bindings, base classes, called functions and their bodies).

Every set here over-approximates what the rules read (any identifier counts
as a use); a chunk linted with more real chunks around it gets the same
findings, only later.
"""

from __future__ import annotations

import ast
import bisect
import dataclasses
import re
from collections.abc import Iterable, Sequence

_NEWLINE = re.compile(r"\r\n|\r|\n")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclasses.dataclass(frozen=True)
class ChunkNames:
    """The names through which a chunk and the rest of the module see each other."""

    # Bound at module level (assignments, imports, ``global``), and every def/class name.
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

    def bindings(self, names: frozenset[str] | set[str]) -> tuple:
        """What another chunk that uses ``names`` can see of this import chunk."""
        return tuple(binding for binding in self.imports or () if binding[0] in names)


@dataclasses.dataclass(frozen=True)
class Chunk:
    """One or more top-level statements and the lines up to the next chunk."""

    text: str
    start_line: int  # 1-based line of the chunk's first line in the file
    start_offset: int  # offset of its first character in the file
    line_count: int
    names: ChunkNames


def line_starts(source: str) -> list[int]:
    """Offsets where each line starts, with Python's own line breaks (not str.splitlines)."""
    return [0, *(match.end() for match in _NEWLINE.finditer(source))]


def split_chunks(
    source: str, cache: dict[str, ChunkNames] | None = None, tree: ast.Module | None = None
) -> list[Chunk]:
    """The chunks of ``source`` in file order; raises ``SyntaxError`` when it does not parse.

    ``cache`` maps a chunk's text to its names, so unchanged chunks are not walked again.
    """
    if tree is None:
        tree = ast.parse(source)
    starts = line_starts(source)
    lines = len(starts) if starts[-1] < len(source) or len(starts) == 1 else len(starts) - 1
    groups: list[list[ast.stmt]] = []
    first_lines: list[int] = []
    previous_end = 0
    for statement in tree.body:
        first = _first_line(statement)
        continued = first > 1 and _ends_with_backslash(source, starts, first - 1)
        if groups and (first <= previous_end or continued):
            groups[-1].append(statement)
        else:
            groups.append([statement])
            first_lines.append(first)
        previous_end = max(previous_end, statement.end_lineno or statement.lineno)
    if not groups:
        return []
    first_lines[0] = 1  # the module's leading comments go with the first statement
    chunks = []
    for index, group in enumerate(groups):
        start_line = first_lines[index]
        end_line = first_lines[index + 1] if index + 1 < len(groups) else lines + 1
        start = starts[start_line - 1]
        end = starts[end_line - 1] if end_line - 1 < len(starts) else len(source)
        text = source[start:end]
        names = cache.get(text) if cache is not None else None
        if names is None:
            names = chunk_names(group)
            if cache is not None:
                cache[text] = names
        chunks.append(Chunk(text, start_line, start, end_line - start_line, names))
    return chunks


def _decorators(statement: ast.stmt) -> list[ast.expr]:
    return getattr(statement, "decorator_list", [])


def _ends_with_backslash(source: str, starts: list[int], line: int) -> bool:
    start = starts[line - 1]
    end = starts[line] if line < len(starts) else len(source)
    return source[start:end].rstrip("\r\n").endswith("\\")


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
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name):
            self.calls.add(func.id)
        elif (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
        ):
            self.calls.add(func.attr)
        self.generic_visit(node)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.defines.add(node.name)
        self.binds.add(node.name)
        self.may_compile = self.may_compile or bool(node.decorator_list) or node.name == "forward"
        # Decorators, defaults and annotations are evaluated in the enclosing scope.
        for part in [*node.decorator_list, *_defaults(node.args), node.returns]:
            if part is not None:
                self.visit(part)
        self._annotations(node)
        self._scoped(node.body, _function_locals(node))

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
        self._scoped(node.body)

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
    )


def rechunk(
    old_source: str, old_chunks: Sequence[Chunk], new_source: str, cache: dict[str, ChunkNames]
) -> list[Chunk] | None:
    """The chunks of ``new_source``, parsing only the chunks that differ from ``old_source``.

    The changed text is widened to whole chunks (and one more before it when the
    change starts exactly where a chunk does, since new lines there belong to the
    chunk above).  When that part parses on its own, it starts with a statement
    (its first character is unchanged, or the chunk before was taken too) and
    ends where an unchanged statement starts, so the whole file parses into the
    same statements.  None when it does not parse: the caller parses the whole.
    """
    if not old_chunks:
        return None
    prefix = _common_prefix(old_source, new_source)
    suffix = _common_suffix(old_source, new_source, min(len(old_source), len(new_source)) - prefix)
    low, high = prefix, len(old_source) - suffix
    starts = [chunk.start_offset for chunk in old_chunks]
    first = bisect.bisect_right(starts, low) - 1
    if first > 0 and starts[first] == low:
        first -= 1
    last = max(first, bisect.bisect_right(starts, max(high - 1, low)) - 1)
    start = starts[first]
    end = starts[last + 1] if last + 1 < len(starts) else len(old_source)
    delta = len(new_source) - len(old_source)
    text = new_source[start : end + delta]
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    region = split_chunks(text, cache, tree)
    if text and not region:
        return None  # only comments left: they belong to the chunk above
    if region and _ends_with_backslash(text, line_starts(text), region[-1].start_line):
        return None  # split_chunks joins the next chunk to a line ending in a backslash
    if region and first > 0 and _first_line(tree.body[0]) != 1:
        return None
    line = old_chunks[first].start_line
    placed = [
        dataclasses.replace(
            chunk, start_line=chunk.start_line + line - 1, start_offset=chunk.start_offset + start
        )
        for chunk in region
    ]
    line_delta = sum(c.line_count for c in region) - sum(
        c.line_count for c in old_chunks[first : last + 1]
    )
    after = [
        dataclasses.replace(
            chunk, start_line=chunk.start_line + line_delta, start_offset=chunk.start_offset + delta
        )
        for chunk in old_chunks[last + 1 :]
    ]
    return [*old_chunks[:first], *placed, *after]


def _first_line(statement: ast.stmt) -> int:
    return min([statement.lineno, *(d.lineno for d in _decorators(statement))])


def _common_prefix(a: str, b: str) -> int:
    # Halving on slice equality: each comparison runs at memcmp speed.
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _common_suffix(a: str, b: str, limit: int) -> int:
    low, high = 0, limit
    while low < high:
        middle = (low + high + 1) // 2
        if a[len(a) - middle :] == b[len(b) - middle :]:
            low = middle
        else:
            high = middle - 1
    return low


class DependencyIndex:
    """Which chunks bind, define and call each name; answers :meth:`needed` per chunk.

    ``entrypoints`` are the linter's (qualified names of functions that start a
    compiled region): a chunk defining a function of that name may compile.
    """

    def __init__(self, chunks: Sequence[Chunk], entrypoints: Iterable[str] = ()) -> None:
        self.chunks = chunks
        self.binders: dict[str, list[int]] = {}
        self.definers: dict[str, list[int]] = {}
        self.callers: dict[str, list[int]] = {}
        self.subclassers: dict[str, list[int]] = {}
        self.star_imports = [i for i, chunk in enumerate(chunks) if chunk.names.star_import]
        for index, chunk in enumerate(chunks):
            for name in chunk.names.binds:
                self.binders.setdefault(name, []).append(index)
            for name in chunk.names.base_names:
                self.subclassers.setdefault(name, []).append(index)
            for name in chunk.names.defines:
                self.definers.setdefault(name, []).append(index)
            for name in chunk.names.calls:
                self.callers.setdefault(name, []).append(index)
        self.compiled = self._compiled({re.split(r"[.:]", name)[-1] for name in entrypoints})

    def _compiled(self, entry_names: set[str]) -> set[int]:
        """Chunks that may hold a compiled function: a region's start, or called from one."""
        found = {
            index
            for index, chunk in enumerate(self.chunks)
            if chunk.names.may_compile or chunk.names.defines & entry_names
        }
        pending = list(found)
        while pending:
            for name in self.chunks[pending.pop()].names.calls:
                for callee in self.definers.get(name, ()):
                    if callee not in found:
                        found.add(callee)
                        pending.append(callee)
        return found

    def needed(self, index: int) -> list[int]:
        """The chunks to lint with chunk ``index`` (itself included), in file order."""
        chunks = self.chunks
        # Callers first: whether a function is compiled depends on who calls it (only
        # callers that may be compiled themselves pass a region on).
        callers = {index}
        pending = [index]
        while pending:
            current = pending.pop()
            for name in chunks[current].names.defines:
                for caller in self.callers.get(name, ()):
                    if caller not in callers and caller in self.compiled:
                        callers.add(caller)
                        pending.append(caller)
        # The subclasses of its classes, which may rebuild their layers.
        pending = [index]
        while pending:
            for name in chunks[pending.pop()].names.classes:
                for subclass in self.subclassers.get(name, ()):
                    if subclass not in callers:
                        callers.add(subclass)
                        pending.append(subclass)
        # Then everything any of them uses, and what that uses in turn.
        found = set(callers) | set(self.star_imports)
        pending = list(found)
        while pending:
            current = pending.pop()
            for name in chunks[current].names.uses:
                for binder in self.binders.get(name, ()):
                    if binder not in found:
                        found.add(binder)
                        pending.append(binder)
        return sorted(found)
