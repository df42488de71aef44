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
