"""Metadata a lint needs for every node, computed without libcst's generic visitor.

libcst's ``ParentNodeProvider`` walks the tree with a visitor and, for every
node it leaves, asks for ``node.children``, which runs that node's
``_visit_and_replace_children`` a second time: about a sixth of a whole-file
lint.  A node's children are exactly the CSTNode values of its dataclass
fields (flattened from sequences), so a parent map is a plain walk over those
fields.  ``QualifiedNameProvider`` walks the whole tree too, only to store a
lazy ``scope.get_qualified_names_for(node)`` per node; :class:`LazyQualifiedNames`
answers the same question for the nodes the rules ask about.

``tests/refactors/test_fast_tree.py`` checks both against libcst's providers on
real files.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import libcst as cst
from libcst.metadata import PositionProvider

# CSTNode subclass -> the names of its fields (children are among their values).
_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields(node_type: type) -> tuple[str, ...]:
    names = _FIELDS.get(node_type)
    if names is None:
        names = _FIELDS[node_type] = tuple(f.name for f in dataclasses.fields(node_type))
    return names


def parent_map(module: cst.Module) -> dict[cst.CSTNode, cst.CSTNode]:
    """Every node of ``module`` but the module itself -> its parent (as ParentNodeProvider)."""
    parents: dict[cst.CSTNode, cst.CSTNode] = {}
    stack: list[cst.CSTNode] = [module]
    node_type = cst.CSTNode
    while stack:
        node = stack.pop()
        for name in _fields(type(node)):
            value = getattr(node, name)
            if isinstance(value, node_type):
                parents[value] = node
                stack.append(value)
            elif isinstance(value, (tuple, list)):
                for item in value:
                    if isinstance(item, node_type):
                        parents[item] = node
                        stack.append(item)
    return parents


class LazyQualifiedNames:
    """``QualifiedNameProvider``'s answers, found when asked for (the same scope call)."""

    def __init__(self, scopes: Mapping) -> None:
        self._scopes = scopes
        self._found: dict[cst.CSTNode, object] = {}

    def get(self, node: cst.CSTNode, default=None):
        found = self._found.get(node)
        if found is None:
            scope = self._scopes.get(node)
            if scope is None:
                # The provider stores an empty set for a node outside any scope; every
                # caller here passes an empty set as the default for the rest.
                return set() if default is None else default
            found = self._found[node] = scope.get_qualified_names_for(node)
        return found

    def __getitem__(self, node: cst.CSTNode):
        return self.get(node, set())


class LazyPositions:
    """``PositionProvider``'s ranges, computed one top-level statement at a time when asked.

    The provider generates the code of the whole module to place every node, but a
    lint asks for the ranges of its findings only.  A top-level statement's first
    line comes from :mod:`ast` (a decorated one starts at its first decorator),
    less the blank and comment lines libcst counts as the statement's own; its
    nodes are placed by generating its code alone from there, which is what the
    provider does for it within the module.  When :mod:`ast` and libcst disagree
    on the statements, the provider runs on the whole module.
    """

    def __init__(self, wrapper, source: str, parents: Mapping) -> None:
        self._wrapper = wrapper
        self._module: cst.Module = wrapper.module
        self._source = source
        self._parents = parents
        self._computed: dict[cst.CSTNode, object] = {}
        self._starts: dict[cst.CSTNode, int] | None = None
        self._whole = None

    def _statement_starts(self) -> dict[cst.CSTNode, int] | None:
        import ast

        try:
            tree = ast.parse(self._source)
        except (SyntaxError, ValueError):
            return None
        lines: list[int] = []
        for statement in tree.body:
            decorators = getattr(statement, "decorator_list", None)
            line = decorators[0].lineno if decorators else statement.lineno
            if not lines or line != lines[-1]:
                lines.append(line)  # statements joined by ``;`` share one libcst line
        body = self._module.body
        if len(lines) != len(body):
            return None
        return {
            statement: line - len(getattr(statement, "leading_lines", ()))
            for statement, line in zip(body, lines)
        }

    def _place(self, statement: cst.CSTNode, line: int) -> None:
        from libcst.metadata.position_provider import PositionProvidingCodegenState

        state = PositionProvidingCodegenState(
            default_indent=self._module.default_indent,
            default_newline=self._module.default_newline,
            provider=self,
        )
        state.line = line
        statement._codegen(state)

    def get(self, node: cst.CSTNode, default=None):
        found = self._computed.get(node)
        if found is not None:
            return found
        if self._whole is None:
            if self._starts is None:
                self._starts = self._statement_starts()
                if self._starts is None:
                    self._whole = self._wrapper.resolve(PositionProvider)
            if self._whole is None:
                top = node
                while top is not None and top not in self._starts:
                    top = self._parents.get(top)
                if top is None:
                    # The module itself, its header or footer: the provider places those.
                    self._whole = self._wrapper.resolve(PositionProvider)
                else:
                    self._place(top, self._starts.pop(top))
                    return self._computed.get(node, default)
        return self._whole.get(node, default)

    def __getitem__(self, node: cst.CSTNode):
        found = self.get(node)
        if found is None:
            raise KeyError(node)
        return found


# -- a read-only walk in libcst's order, without rebuilding every node -------------------

# (node type, the fields holding children) -> those fields in the order libcst visits them.
_ORDER: dict[tuple, tuple[str, ...]] = {}
# visitor class -> node type -> (visit_<Type>, leave_<Type>) functions, None for the stubs.
_DISPATCH: dict[type, dict[type, tuple]] = {}


class _Recorder(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.seen.append(node)
        return False

    def on_leave(self, original_node: cst.CSTNode) -> None:
        pass


def _child_fields(node: cst.CSTNode) -> tuple[str, ...]:
    node_type = type(node)
    present = []
    node_base = cst.CSTNode
    for name in _fields(node_type):
        value = getattr(node, name)
        # libcst's sequence fields hold nodes only: a non-empty one holds children.
        if isinstance(value, node_base) or (value and type(value) in (tuple, list)):
            present.append(name)
    key = (node_type, tuple(present))
    order = _ORDER.get(key)
    if order is None:
        # Ask libcst once per shape: which child it visits first is in each node type's
        # _visit_and_replace_children (a decorator before the ``def``, the body last).
        recorder = _Recorder()
        node._visit_and_replace_children(recorder)
        field_of = {}
        for name in present:
            value = getattr(node, name)
            for item in value if isinstance(value, (tuple, list)) else (value,):
                field_of[id(item)] = name
        ordered: list[str] = []
        for child in recorder.seen:
            name = field_of.get(id(child))
            if name is None:
                raise AssertionError(f"libcst visits a child of {node_type.__name__} not a field")
            if name not in ordered:
                ordered.append(name)
        if set(ordered) != set(present):
            raise AssertionError(f"libcst does not visit every field of {node_type.__name__}")
        order = _ORDER[key] = tuple(ordered)
    return order


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """``node.children`` (the same nodes, in the same order), without rebuilding ``node``."""
    found = []
    for name in _child_fields(node):
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            found.append(value)
        else:
            found.extend(item for item in value if isinstance(item, cst.CSTNode))
    return found


# Whitespace, comments and punctuation: subtrees that hold nothing but more of the same.
_TRIVIA_BASES = (
    cst.BaseParenthesizableWhitespace,
    cst.EmptyLine,
    cst.TrailingWhitespace,
    cst.Newline,
    cst.Comment,
    cst.BaseBinaryOp,
    cst.BaseUnaryOp,
    cst.BaseCompOp,
    cst.BaseAugOp,
    cst.BaseBooleanOp,
    cst.Comma,
    cst.Dot,
    cst.Colon,
    cst.AssignEqual,
    cst.Semicolon,
    cst.LeftParen,
    cst.RightParen,
    cst.LeftSquareBracket,
    cst.RightSquareBracket,
    cst.LeftCurlyBrace,
    cst.RightCurlyBrace,
    cst.Asynchronous,
    cst.ImportStar,
)


def _subclass_names(bases) -> set[str]:
    names, pending = set(), list(bases)
    while pending:
        current = pending.pop()
        names.add(current.__name__)
        pending.extend(current.__subclasses__())
    return names


_TRIVIA_NAMES = _subclass_names(_TRIVIA_BASES)


def _subclasses(base: type) -> list[type]:
    found, pending = [], [base]
    while pending:
        current = pending.pop()
        found.append(current)
        pending.extend(current.__subclasses__())
    return found


_SKIP = (None, None, True)
_TRIVIA_TABLE = {node_type: _SKIP for base in _TRIVIA_BASES for node_type in _subclasses(base)}
# Whether a visitor class handles trivia, by where it is defined: most visitors are
# classes local to a function, a new class object on every call.
_CARES_FOR_TRIVIA: dict[tuple[str, str], bool] = {}


def _dispatch(visitor_type: type) -> dict[type, tuple]:
    table = _DISPATCH.get(visitor_type)
    if table is not None:
        return table
    where = (visitor_type.__module__, visitor_type.__qualname__)
    cares = _CARES_FOR_TRIVIA.get(where)
    if cares is None:
        cares = _CARES_FOR_TRIVIA[where] = any(
            _handlers(visitor_type, type(name, (), {}))[:2] != (None, None)
            for name in _TRIVIA_NAMES
        )
    # A visitor that handles none of the trivia need not walk into it.
    table = {} if cares else dict(_TRIVIA_TABLE)
    if "<locals>" not in visitor_type.__qualname__:
        _DISPATCH[visitor_type] = table  # module-level classes live as long as the module
    return table


def _handlers(visitor_type: type, node_type: type) -> tuple:
    name = node_type.__name__
    visit = getattr(visitor_type, f"visit_{name}", None)
    leave = getattr(visitor_type, f"leave_{name}", None)
    if visit is getattr(cst.CSTVisitor, f"visit_{name}", None):
        visit = None
    if leave is getattr(cst.CSTVisitor, f"leave_{name}", None):
        leave = None
    return visit, leave, False


def fast_visit(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """``node.visit(visitor)`` for a read-only ``CSTVisitor`` that uses only visit_<Type>/leave_<Type>.

    Same calls in the same order (a ``visit_`` returning False skips the children,
    ``leave_`` still runs), but children are read from the node's fields instead of
    rebuilding every node as libcst's walk does, several times faster.  Visitors with
    their own ``on_visit``/``on_leave`` or attribute visits must use ``node.visit``.
    """
    visitor_type = type(visitor)
    if visitor_type.on_visit is not cst.CSTVisitor.on_visit or (
        visitor_type.on_leave is not cst.CSTVisitor.on_leave
    ):
        raise TypeError(f"{visitor_type.__name__} overrides on_visit/on_leave: use node.visit")
    table = _dispatch(visitor_type)
    stack: list = [(node, False)]
    while stack:
        current, leaving = stack.pop()
        node_type = type(current)
        handlers = table.get(node_type)
        if handlers is None:
            handlers = table[node_type] = _handlers(visitor_type, node_type)
        visit, leave, skip = handlers
        if skip:
            continue
        if leaving:
            leave(visitor, current)
            continue
        if leave is not None:
            stack.append((current, True))
        if visit is not None and visit(visitor, current) is False:
            continue
        below = children(current)
        for child in reversed(below):
            stack.append((child, False))
