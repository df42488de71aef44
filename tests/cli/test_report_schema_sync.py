"""``lsp_server/report_schema.json`` and ``docs/report-schema.md`` name the same fields.

The doc belongs to the runtime; the machine-readable schema here.  Every field
the schema knows must be documented, so a field added on one side shows up as
a failure rather than as a silent disagreement.
"""

from __future__ import annotations

import json
import re

import jsonschema
import pytest
from cli_helpers import REPO, SCHEMA_PATH

DOC = REPO / "docs" / "report-schema.md"


def field_names(schema: dict) -> set[str]:
    names = set(schema["properties"])
    for definition in schema["$defs"].values():
        names |= set(definition.get("properties", {}))
    for name in ("tool", "function", "error", "guards", "mocks", "side_effects"):
        node = schema["properties"][name]
        node = node.get("items", node)
        for option in node.get("oneOf", [node]):
            names |= set(option.get("properties", {}))
    return names


def test_schema_is_valid_draft_2020_12():
    jsonschema.Draft202012Validator.check_schema(json.loads(SCHEMA_PATH.read_text()))


@pytest.mark.skipif(not DOC.exists(), reason="docs/report-schema.md (runtime) not written yet")
def test_every_schema_field_is_documented():
    doc = DOC.read_text()
    missing = sorted(
        name
        for name in field_names(json.loads(SCHEMA_PATH.read_text()))
        if f"`{name}`" not in doc and f'"{name}"' not in doc
    )
    assert not missing, f"fields in report_schema.json but not in docs/report-schema.md: {missing}"


@pytest.mark.skipif(not DOC.exists(), reason="docs/report-schema.md (runtime) not written yet")
def test_every_documented_field_is_in_the_schema():
    example = DOC.read_text().split("```")[1]  # the document's first code block
    # op_counts maps operator names to counts: its keys are data, not fields.
    example = re.sub(r'"op_counts": \{[^}]*\}', '"op_counts": {}', example)
    documented = set(re.findall(r'"(\w+)":', example))
    known = field_names(json.loads(SCHEMA_PATH.read_text()))
    assert documented, "no example report found in docs/report-schema.md"
    assert documented <= known, f"documented but not in the schema: {sorted(documented - known)}"
