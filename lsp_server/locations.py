"""Where things are: definitions in a source file, and entrypoints in the workspace.

Code lenses need the functions and ``nn.Module`` classes of a file; runtime
failures need the line of an entrypoint's ``def``; the "Analyze" lens needs
to know which configured entrypoint belongs to a function.  All of it is
answered from source text with :mod:`ast` (fast, and nothing is imported or
run).  ``ast`` reports columns as UTF-8 byte offsets; they become code-point
columns here, through the position helper, before anything else sees them.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from fullgraph.lsp_server.positions import split_lines, utf8_offset_to_column

# Base-class spellings that make a class an nn.Module for the lens.  Names are
# matched as written, since the lens is a convenience: a miss costs one lens.
_MODULE_BASES = {"Module", "nn.Module", "torch.nn.Module"}


@dataclasses.dataclass(frozen=True)
class Definition:
    qualname: str
    kind: str  # "function" or "module" (an nn.Module subclass)
    line: int  # 1-based line of the name
    column: int  # code-point column of the name
    end_column: int
    last_line: int  # last line of the body
    required_parameters: int  # positional parameters without defaults (self excluded)


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _name_span(node: ast.AST, lines: list[str], keywords: int) -> tuple[int, int, int]:
    """Line and code-point columns of a def/class name (ast points at the keyword).

    The name is read from the text, not from ``node.name``: Python normalizes
    identifiers (NFKC), so ``def 𝔵():`` is named "x" but spelled with one
    astral character in the source.
    """
    text = lines[node.lineno - 1] if node.lineno - 1 < len(lines) else ""
    position = utf8_offset_to_column(text, node.col_offset)
    for _ in range(keywords):  # "def" / "class", or "async" then "def"
        while position < len(text) and text[position].isidentifier():
            position += 1
        while position < len(text) and text[position] in " \t\\":
            position += 1
    end = position
    while end < len(text) and text[position : end + 1].isidentifier():
        end += 1
    return node.lineno, position, end


def definitions(source: str) -> list[Definition]:
    """Functions, methods and nn.Module classes of ``source``; [] when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    lines = split_lines(source)
    found: list[Definition] = []

    def visit(body: list[ast.stmt], prefix: str, in_class: bool) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                keywords = 2 if isinstance(node, ast.AsyncFunctionDef) else 1
                line, column, end_column = _name_span(node, lines, keywords)
                positional = node.args.posonlyargs + node.args.args
                required = len(positional) - len(node.args.defaults)
                if in_class and positional and not _is_static(node):
                    required -= 1
                found.append(
                    Definition(
                        qualname=prefix + node.name,
                        kind="function",
                        line=line,
                        column=column,
                        end_column=end_column,
                        last_line=node.end_lineno or line,
                        required_parameters=max(required, 0)
                        + sum(1 for default in node.args.kw_defaults if default is None),
                    )
                )
                visit(node.body, f"{prefix}{node.name}.<locals>.", False)
            elif isinstance(node, ast.ClassDef):
                if any(_dotted(base) in _MODULE_BASES for base in node.bases):
                    line, column, end_column = _name_span(node, lines, 1)
                    found.append(
                        Definition(
                            qualname=prefix + node.name,
                            kind="module",
                            line=line,
                            column=column,
                            end_column=end_column,
                            last_line=node.end_lineno or line,
                            required_parameters=0,
                        )
                    )
                visit(node.body, f"{prefix}{node.name}.", True)

    visit(tree.body, "", False)
    return found


def _is_static(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(_dotted(decorator) == "staticmethod" for decorator in node.decorator_list)


def module_name(path: Path, root: Path) -> str | None:
    """Dotted module name of ``path`` inside ``root`` (``src/`` layouts included)."""
    try:
        relative = path.resolve().relative_to(root.resolve())
    except ValueError:
        return None
    parts = list(relative.with_suffix("").parts)
    if parts and parts[-1] == "__init__":
        parts.pop()
    if len(parts) > 1 and parts[0] == "src":
        parts.pop(0)
    if not parts or not all(part.isidentifier() for part in parts):
        return None
    return ".".join(parts)


def module_file(module: str, root: Path) -> Path | None:
    """The file under ``root`` that defines dotted ``module``, if any."""
    relative = Path(*module.split("."))
    for base in (root, root / "src"):
        for candidate in (base / relative.with_suffix(".py"), base / relative / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


def split_entry(entry: str) -> tuple[str, str] | None:
    """``"package.module:function"`` -> (module, function); None when malformed."""
    module, sep, function = entry.strip().partition(":")
    return (module, function) if sep and module and function else None


def entry_for(path: Path, qualname: str, root: Path) -> str | None:
    """The entry string naming function ``qualname`` of ``path``."""
    module = module_name(path, root)
    return f"{module}:{qualname}" if module else None


def entry_definition(entry: str, root: Path) -> tuple[Path, Definition | None] | None:
    """The file of an entrypoint and its definition there (None when not found)."""
    parts = split_entry(entry)
    if parts is None:
        return None
    path = module_file(parts[0], root)
    if path is None:
        return None
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return path, None
    match = next((d for d in definitions(source) if d.qualname == parts[1]), None)
    return path, match
