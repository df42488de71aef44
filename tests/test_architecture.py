"""The package layout docs/architecture.md describes, checked on the source.

Three properties a newcomer relies on when looking for the room for a change:

- no module of ``runtime/``, ``refactors/`` or ``lsp_server/`` is over about
  500 lines (one concern per module);
- no import cycle between the modules of a package, counting imports inside
  functions too (a function-level import that closes a cycle only hides it);
  imports under ``if TYPE_CHECKING:`` do not count, they never run;
- ``fullgraph.refactors.support``, which a user's rewritten model imports at
  run time, imports neither libcst nor the rules.

The checks read the source with ``ast``, so they run without torch (the 3.10
leg) and name the offending modules in their failure.
"""

from __future__ import annotations

import ast
import graphlib
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = {
    "runtime": "fullgraph.runtime",
    "refactors": "fullgraph.refactors",
    "lsp_server": "fullgraph.lsp_server",
}
MAX_LINES = 520


def _module_name(path: pathlib.Path) -> str:
    top, *rest = path.relative_to(ROOT).with_suffix("").parts
    name = ".".join([PACKAGES[top], *rest])
    return name.removesuffix(".__init__")


def _imported_names(path: pathlib.Path, module: str) -> set[str]:
    """Every module name (and ``module.attribute``) the file imports, at any depth."""
    names: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(node.orelse)
                continue
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = package.split(".")
                    base_parts = parts[: len(parts) - (node.level - 1)]
                    base = ".".join(base_parts + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                names.add(base)
                names.update(f"{base}.{alias.name}" for alias in node.names)
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):
                    visit([child])
                elif isinstance(child, ast.excepthandler):
                    visit(child.body)

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return names


def _import_graph(folder: str) -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in (ROOT / folder).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        # A module importing its own package (``fullgraph.runtime`` from inside it)
        # is not an edge: the package's __init__ runs first either way.
        graph[module] = {
            name
            for name in _imported_names(path, module)
            if name in modules and name != module and not module.startswith(name + ".")
        }
    return graph


@pytest.mark.parametrize("folder", sorted(PACKAGES))
def test_no_module_over_about_500_lines(folder):
    long = {
        str(p.relative_to(ROOT)): n
        for p in sorted((ROOT / folder).rglob("*.py"))
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, f"modules over {MAX_LINES} lines: {long}"


@pytest.mark.parametrize("folder", sorted(PACKAGES))
def test_no_import_cycle_between_modules(folder):
    try:
        tuple(graphlib.TopologicalSorter(_import_graph(folder)).static_order())
    except graphlib.CycleError as error:
        cycle = " -> ".join(name.rpartition(".")[2] or name for name in error.args[1])
        pytest.fail(f"import cycle in {folder}/: {cycle}")


def test_the_cycle_check_finds_a_cycle(tmp_path, monkeypatch):
    """The check above can fail: two modules importing each other inside functions."""
    package = tmp_path / "runtime"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from fullgraph.runtime import b\n")
    (package / "b.py").write_text("def g():\n    from .a import f\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    with pytest.raises(graphlib.CycleError):
        tuple(graphlib.TopologicalSorter(_import_graph("runtime")).static_order())


def test_support_imports_neither_libcst_nor_the_rules():
    """A rewritten model imports fullgraph.refactors.support; it must stay light."""
    code = (
        "import sys, fullgraph.refactors.support\n"
        "heavy = sorted(m for m in sys.modules if m == 'libcst' or m.startswith('libcst.')"
        " or m.startswith('fullgraph.refactors.rules'))\n"
        "print(heavy[:5])\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]", result.stdout
