"""The lint's own parent map, positions and qualified names equal libcst's providers.

``refactors/fast_tree.py`` replaces three whole-tree libcst passes; a difference
would move a squiggle or change what a name is taken for, so every node of the
fixtures and of real model files (transformers, when installed) is compared.
"""

from __future__ import annotations

import pathlib

import libcst as cst
import libcst.metadata as meta
import pytest

from fullgraph.refactors.fast_tree import (
    LazyPositions,
    LazyQualifiedNames,
    children,
    fast_visit,
    parent_map,
)

FIXTURES = pathlib.Path(__file__).parent / "fixtures"


def _real_files() -> list[pathlib.Path]:
    files = sorted(FIXTURES.rglob("*.py"))
    try:
        import transformers
    except ImportError:
        return files
    models = pathlib.Path(transformers.__file__).parent / "models"
    return files + [models / n / f"modeling_{n}.py" for n in ("bert", "gpt2", "t5", "whisper")]


FILES = [f for f in _real_files() if f.exists()]
EXTRA = {
    "decorators_comments": "# head\n\nimport torch\n\n\n# about f\n@torch.no_grad()\n"
    "# between\n@staticmethod\ndef f(x):\n    return x  # tail\n\na = 1; b = 2\n"
    "if a: b = 3\n\n\nclass C:\n    pass\n# footer\n",
    "crlf": "import torch\r\n\r\ndef f(x):\r\n\r\n    return x.sum()\r\n",
}


def _cases():
    for path in FILES:
        yield pytest.param(path.read_text(encoding="utf-8"), id=path.name)
    for name, source in EXTRA.items():
        yield pytest.param(source, id=name)


@pytest.mark.parametrize("source", _cases())
def test_fast_metadata_equals_libcst_providers(source):
    module = cst.parse_module(source)
    wrapper = meta.MetadataWrapper(module, unsafe_skip_copy=True)
    parents = parent_map(module)
    assert parents == dict(wrapper.resolve(meta.ParentNodeProvider))

    positions = LazyPositions(wrapper, source, parents)
    expected = wrapper.resolve(meta.PositionProvider)
    in_body = [node for node in expected if _top(node, parents, module) in module.body]
    assert in_body
    for node in in_body:
        assert positions[node] == expected[node], cst.Module([]).code_for_node(node)
    assert positions._whole is None  # placed statement by statement, never the whole module

    scopes = wrapper.resolve(meta.ScopeProvider)
    names = LazyQualifiedNames(scopes)
    for node, value in wrapper.resolve(meta.QualifiedNameProvider).items():
        value = value() if callable(value) else value
        assert set(names.get(node, set())) == set(value)


def _top(node, parents, module):
    while node is not None and parents.get(node) is not module:
        node = parents.get(node)
    return node


class _Log(cst.CSTVisitor):
    """Records every call libcst makes, and prunes one subtree."""

    def __init__(self) -> None:
        super().__init__()
        self.log: list[tuple[str, int]] = []

    def visit_Name(self, node):
        self.log.append(("visit Name", id(node)))

    def leave_Name(self, node):
        self.log.append(("leave Name", id(node)))

    def visit_FunctionDef(self, node):
        self.log.append(("visit FunctionDef", id(node)))
        return node.name.value != "forward"  # a False skips the children, not the leave

    def leave_FunctionDef(self, node):
        self.log.append(("leave FunctionDef", id(node)))

    def visit_Decorator(self, node):
        self.log.append(("visit Decorator", id(node)))

    def visit_Call(self, node):
        self.log.append(("visit Call", id(node)))


class _LogTrivia(_Log):
    def visit_Comment(self, node):
        self.log.append(("visit Comment", id(node)))

    def visit_Comma(self, node):
        self.log.append(("visit Comma", id(node)))


@pytest.mark.parametrize("source", _cases())
@pytest.mark.parametrize("visitor", [_Log, _LogTrivia])
def test_fast_visit_makes_libcst_calls_in_libcst_order(source, visitor):
    module = cst.parse_module(source)
    expected, fast = visitor(), visitor()
    module.visit(expected)
    fast_visit(module, fast)
    assert fast.log == expected.log
    assert children(module.body[-1]) == list(module.body[-1].children)


def test_fast_visit_refuses_a_visitor_with_its_own_on_visit():
    class _Own(cst.CSTVisitor):
        def on_visit(self, node):
            return True

    with pytest.raises(TypeError):
        fast_visit(cst.parse_module("x = 1\n"), _Own())
