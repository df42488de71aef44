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

from fullgraph.refactors.fast_tree import LazyPositions, LazyQualifiedNames, parent_map

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
