"""One configuration: the docs table, the CLI, the server and the VS Code extension agree.

docs/configuration.md's table is generated from the settings model; the
extension contributes a VS Code setting for every key the server reads, with
the model's default and a JSON type that the model accepts.
"""

from __future__ import annotations

import json
from pathlib import Path

from fullgraph.lsp_server import settings as settings_model

REPO = Path(__file__).resolve().parents[2]
MANIFEST = REPO / "vscode-extension" / "package.json"


def contributed() -> dict[str, dict]:
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    return manifest["contributes"]["configuration"]["properties"]


def test_the_docs_table_is_the_settings_model():
    text = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert settings_model.settings_table() in text, (
        "docs/configuration.md is out of date: paste settings.settings_table() into it"
    )
    for doc in ("cli.md", "lsp.md", "vscode.md"):
        assert "configuration.md" in (REPO / "docs" / doc).read_text(encoding="utf-8"), doc


def _default(field) -> object:
    if field.default_factory is not __import__("dataclasses").MISSING:
        return field.default_factory()
    return field.default


def test_the_extension_can_set_every_setting_the_server_reads():
    properties = contributed()
    for name, field in settings_model.FIELDS.items():
        if field.metadata["read_by"] == "cli":
            continue
        key = f"fullgraph.{settings_model.client_key(name)}"
        assert key in properties, f"{key} is not contributed in vscode-extension/package.json"
        spec = properties[key]
        default = _default(field)
        if default is not None:
            assert spec["default"] == default, key
            # What VS Code would send as the default, the model accepts as is.
            assert settings_model.structure_value(name, spec["default"]) == default, key
        enum = spec.get("enum")
        if enum:
            for choice in enum:
                settings_model.structure_value(name, choice)


def test_every_contributed_setting_is_one_the_model_knows():
    for key in contributed():
        if key == "fullgraph.trace.server":  # vscode-languageclient's own
            continue
        name = settings_model.snake_case(key.removeprefix("fullgraph."))
        assert name in settings_model.FIELDS, f"{key} is contributed but no program reads it"
