"""Finding how a module or name is reachable in the file, and adding an import exactly once.

An import is named by a *spec*: ``"torch"`` means ``import torch``;
``"fullgraph.refactors.support:deferred"`` means
``from fullgraph.refactors.support import deferred``.  Fixes refer to it by
the name the file already uses (``import torch as T`` gives ``T.where``);
when the file lacks it, the fix adds it after the last top-level import (a
from-import joins an existing one of the same module), and never twice.
"""

from __future__ import annotations

import libcst as cst
from libcst.helpers import get_full_name_for_node


def _top_level_imports(module: cst.Module):
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Import):
                    yield small


def module_alias(module: cst.Module, dotted: str) -> str | None:
    """The name under which ``dotted`` (a module) is bound at top level, if it is imported."""
    for statement in _top_level_imports(module):
        for alias in statement.names:
            name = get_full_name_for_node(alias.name)
            if name != dotted:
                continue
            if alias.asname is not None:
                return get_full_name_for_node(alias.asname.name)
            return dotted
    return None


def _from_imports(module: cst.Module, dotted: str):
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if (
                    isinstance(small, cst.ImportFrom)
                    and small.relative == ()
                    and small.module is not None
                    and get_full_name_for_node(small.module) == dotted
                    and not isinstance(small.names, cst.ImportStar)
                ):
                    yield statement, small


def name_alias(module: cst.Module, dotted: str, name: str) -> str | None:
    """The local name of ``from dotted import name`` at top level, if present."""
    for _, small in _from_imports(module, dotted):
        for alias in small.names:
            if get_full_name_for_node(alias.name) == name:
                return get_full_name_for_node(alias.asname.name) if alias.asname else name
    return None


def module_reference(module: cst.Module, spec: str) -> str:
    """The expression a fix writes to reach ``spec``; pair it with :func:`ensure_import`."""
    if ":" in spec:
        dotted, name = spec.split(":")
        return name_alias(module, dotted, name) or name
    return module_alias(module, spec) or spec


def insertion_index(module: cst.Module) -> int:
    index = 0
    for position, statement in enumerate(module.body):
        if not isinstance(statement, cst.SimpleStatementLine):
            break
        small = statement.body[0] if statement.body else None
        is_docstring = (
            position == 0
            and isinstance(small, cst.Expr)
            and isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString))
        )
        if is_docstring or isinstance(small, (cst.Import, cst.ImportFrom)):
            index = position + 1
        else:
            break
    return index


def ensure_import(module: cst.Module, spec: str) -> cst.Module:
    """``module`` with the import of ``spec`` added unless it is imported already."""
    if ":" in spec:
        dotted, name = spec.split(":")
        if name_alias(module, dotted, name) is not None:
            return module
        for statement, small in _from_imports(module, dotted):
            names = [*small.names]
            names[-1] = names[-1].with_changes(
                comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            )
            names.append(cst.ImportAlias(cst.Name(name)))
            new_small = small.with_changes(names=names)
            new_statement = statement.with_changes(
                body=[new_small if s is small else s for s in statement.body]
            )
            return module.with_changes(
                body=[new_statement if s is statement else s for s in module.body]
            )
        statement = cst.parse_statement(f"from {dotted} import {name}\n")
    elif module_alias(module, spec) is not None:
        return module
    else:
        statement = cst.parse_statement(f"import {spec}\n")
    index = insertion_index(module)
    body = list(module.body)
    if index < len(body) and index == 0:
        # Keep a leading comment block (license, shebang) above the new import.
        first = body[0]
        statement = statement.with_changes(leading_lines=first.leading_lines)
        body[0] = first.with_changes(leading_lines=())
    body.insert(index, statement)
    return module.with_changes(body=body)
