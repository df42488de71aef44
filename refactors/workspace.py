"""Compiled regions across the files of a workspace (issue 16, point 3).

``lint_source`` sees one file: a helper in ``helpers.py`` that prints, called
from a compiled ``forward`` in ``model.py``, is compiled code all the same, but
linted alone its print is a hint nobody is shown.  :func:`cross_file_entrypoints`
reads every file once with :mod:`ast` (a few percent of a lint) and says, per
file, which of its module-level functions a compiled function of another file
calls, so that the CLI lints that file with them as entrypoints.

What counts as compiled here is what the rules count (``regions.py``): a
``forward`` of a class, a function decorated with something named ``compile``,
configured entrypoints, and in-file callees of those, followed by name.  A call
reaches another file through ``from module import name [as alias]`` (absolute
within the workspace root, or relative) or ``import module [as alias]`` then
``alias.name(...)``; the closure follows callees into further files.  Anything
else (methods of imported classes, names passed around) is not followed:
a finding can be missed, never invented.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path


def _is_compile_decorator(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
    return "compile" in name


def _calls(function: ast.AST) -> tuple[set[str], set[tuple[str, str]]]:
    """Plain ``f(...)`` names and ``m.f(...)`` (m, f) pairs called in ``function``."""
    plain, dotted = set(), set()
    for node in ast.walk(function):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                plain.add(func.id)
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                if func.value.id == "self":
                    plain.add(func.attr)
                else:
                    dotted.add((func.value.id, func.attr))
    return plain, dotted


class _File:
    def __init__(self, path: Path, tree: ast.Module, module: str) -> None:
        self.path = path
        self.module = module  # dotted name under the root ("pkg.helpers")
        self.functions: dict[str, list[ast.AST]] = {}  # name -> defs (any depth, by name)
        self.top_level: set[str] = set()
        self.roots: set[str] = set()
        self.imported: dict[str, tuple[str, str]] = {}  # local name -> (module, name)
        self.modules: dict[str, str] = {}  # local alias -> module
        package = module.rpartition(".")[0] if path.name != "__init__.py" else module
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.top_level.add(node.name)
            elif isinstance(node, ast.ImportFrom):
                source = _resolve(package, node.module, node.level)
                for alias in node.names:
                    self.imported[alias.asname or alias.name] = (source, alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.modules[alias.asname] = alias.name
                    else:
                        self.modules[alias.name.partition(".")[0]] = alias.name.partition(".")[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                        item.name == "forward"
                    ):
                        self.roots.add(item.name)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.setdefault(node.name, []).append(node)
                if any(_is_compile_decorator(d) for d in node.decorator_list):
                    self.roots.add(node.name)


def _resolve(package: str, module: str | None, level: int) -> str:
    if level == 0:
        return module or ""
    parts = package.split(".") if package else []
    base = parts[: len(parts) - (level - 1)] if level > 1 else parts
    return ".".join([*base, module] if module else base)


def cross_file_entrypoints(
    sources: Mapping[Path, str], root: Path, entrypoints: Iterable[str] = ()
) -> dict[Path, dict[str, str]]:
    """File -> {module-level function: the compiled caller in another file} for ``sources``.

    ``root`` is the folder module names are counted from; ``entrypoints`` are
    qualified names the user configured (``pkg.model.step`` or a plain name).
    """
    files: dict[str, _File] = {}
    for path, source in sources.items():
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            continue
        try:
            relative = path.resolve().relative_to(root.resolve()).with_suffix("")
        except ValueError:
            relative = Path(path.stem)
        parts = list(relative.parts)
        if parts and parts[-1] == "__init__":
            parts = parts[:-1]
        module = ".".join(parts)
        files[module] = _File(path, tree, module)
    configured = set(entrypoints)
    for file in files.values():
        for name in file.functions:
            if name in configured or f"{file.module}.{name}" in configured:
                file.roots.add(name)

    found: dict[Path, dict[str, str]] = {}
    # (module, function name) reached as compiled, and who reached it
    pending = [(f, name, f"{f.module}.{name}") for f in files.values() for name in f.roots]
    reached = {(f.module, name) for f, name, _ in pending}
    while pending:
        file, name, caller = pending.pop()
        for definition in file.functions.get(name, []):
            plain, dotted = _calls(definition)
            targets: list[tuple[str, str]] = []
            for called in plain:
                if called in file.functions:
                    targets.append((file.module, called))  # the same file: follow it
                elif called in file.imported:
                    targets.append(file.imported[called])
            for alias, attribute in dotted:
                if alias in file.modules:
                    targets.append((file.modules[alias], attribute))
                elif alias in file.imported:
                    # ``from pkg import helpers`` then ``helpers.noisy(...)``
                    module, imported = file.imported[alias]
                    targets.append((f"{module}.{imported}" if module else imported, attribute))
            for module, function in targets:
                target = files.get(module)
                if target is None or (module, function) in reached:
                    continue
                if function not in target.functions:
                    continue
                reached.add((module, function))
                where = f"{file.module}.{name}" if module != file.module else caller
                if module != file.module and function in target.top_level:
                    found.setdefault(target.path, {})[function] = where
                pending.append((target, function, where))
    return found


def workspace_entrypoints(paths: Iterable[Path], root: Path) -> dict[Path, dict[str, str]]:
    """:func:`cross_file_entrypoints` of the ``.py`` files ``paths``, as ``lint_source`` and
    ``fix_source`` take them: resolved file path -> {function: the reason it is compiled}."""
    sources = {}
    for path in {Path(p).resolve() for p in paths}:  # keys: resolved paths, each file once
        if path.suffix != ".py":
            continue
        try:
            sources[path] = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
    return {
        path: {
            name: f"it is called from {caller}, which is compiled (in another file)"
            for name, caller in functions.items()
        }
        for path, functions in cross_file_entrypoints(sources, root).items()
    }
