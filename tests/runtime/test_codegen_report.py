"""The report and the generated sources: schema, readability, docs for every code."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import torch
from torch import nn

import fullgraph.runtime as fr
from fullgraph.runtime import breaks, docs

ROOT = Path(__file__).resolve().parents[2]


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(8)
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        y = self.fc(self.norm(x))
        if y.sum().item() > 0:  # a Python number: a split, not a merged branch
            y = y * 2
        return {"out": y, "n": x.shape[0]}


def test_report_json_validates_against_the_published_schema():
    report = fr.explain(Block(), torch.randn(2, 8))
    data = json.loads(json.dumps(report.to_json()))  # JSON-serializable
    schema = json.loads((ROOT / "lsp_server" / "report_schema.json").read_text())
    jsonschema.validate(data, schema)
    assert data["schema_version"] == 1
    assert data["graph_count"] == 2 and data["break_count"] == 1
    assert data["breaks"][0]["code"] == "FG202"
    assert data["breaks"][0]["line"] == Block.forward.__code__.co_firstlineno + 2


def test_guard_and_mock_are_readable_python_a_user_can_print():
    compiled = fr.compile(Block(), backend="eager")
    compiled(torch.randn(2, 8))
    record = compiled.records[0]
    compile(record.guard_source, "<guard>", "exec")
    compile(record.mock_source, "<mock>", "exec")
    assert record.guard_source.startswith("def guard(A, K, M, F):")
    assert "tensor metadata of A[0]" in record.guard_source
    assert "M.fc.weight" in record.guard_source.replace("v_M_fc.weight", "M.fc.weight")
    assert "graph0(" in record.mock_source and "'out':" in record.mock_source
    assert "def forward" in record.graph_code


def test_every_break_code_has_its_generated_doc_page():
    for path, text in docs.expected_pages().items():
        assert path.exists(), f"missing {path}; run python -m fullgraph.runtime.docs"
        assert path.read_text() == text, f"{path} is stale; run python -m fullgraph.runtime.docs"
    # FG2xx are the runtime's codes; FG001 (a file that does not parse) is the CLI's.
    assert set(breaks.CATEGORIES) == {p.stem for p in docs.DOCS.glob("FG2*.md")}
