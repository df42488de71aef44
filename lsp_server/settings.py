"""The language server's settings: defaults, then ``[tool.fullgraph]``, then the client.

Three layers are merged key by key: the defaults of :class:`Settings`, the
``[tool.fullgraph]`` table of the workspace's ``pyproject.toml``, and what the
client sends (``initializationOptions`` at start, ``workspace/
didChangeConfiguration`` or ``workspace/configuration`` later).  Client keys
may be camelCase (``runOnSave``) as editors write them; the table uses
snake_case or kebab-case.  One cattrs converter structures every value, with
strict hooks so that ``"no"`` does not become ``True`` and ``"abc"`` does not
become a list of letters.

A bad value never stops the server: the field keeps its previous layer's
value (ultimately its default) and the problem is returned as a readable
message that the server shows with ``window/showMessage``.
"""

from __future__ import annotations

import dataclasses
import re
import sys
import types
import typing
from pathlib import Path
from typing import Any, Literal

import cattrs
import cattrs.errors

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

Severity = Literal["error", "warning", "information", "hint"]
Backend = Literal["inductor", "eager"]

# Where rule documentation lives when the workspace has no docs/rules/<CODE>.md
# or docs/codes/<CODE>.md of its own (a user's project usually has neither).
DEFAULT_DOCS_BASE_URL = "https://github.com/fullgraph/fullgraph/blob/main/docs"


@dataclasses.dataclass
class Settings:
    """Everything the server can be configured with, each with a working default."""

    # Zero-argument builders ("package.module:function") analysed on save and on command.
    entrypoints: list[str] = dataclasses.field(default_factory=list)
    # Seconds one analysis may take; None leaves it to [tool.fullgraph] / the service.
    timeout: float | None = None
    memory_mb: int | None = None
    backend: Backend | None = None
    # Analyse the entrypoints whenever a Python file is saved.
    run_on_save: bool = True
    # Static rules run this long after the last keystroke in a document.
    debounce_ms: int = 150
    # diagnostics.static: the static rules as you type.
    diagnostics_static: bool = True
    # diagnostics.runtime: running entrypoints at all (off in an untrusted workspace,
    # since analysis executes the project's code).
    diagnostics_runtime: bool = True
    # Rule codes whose findings are hidden (e.g. ["FG104"]).
    ignore: list[str] = dataclasses.field(default_factory=list)
    # Severity of runtime graph breaks; failures of the analysis itself are errors.
    break_severity: Severity = "warning"
    docs_base_url: str = DEFAULT_DOCS_BASE_URL
    # Where "Compile this function" creates the generated wrapper, relative to the root.
    compiled_dir: str = ".fullgraph/compiled"


_POSITIVE = {"timeout", "memory_mb"}
_NON_NEGATIVE = {"debounce_ms"}


def _strict_converter() -> cattrs.Converter:
    converter = cattrs.Converter()

    def structure_bool(value: Any, _: type) -> bool:
        if isinstance(value, bool):
            return value
        raise ValueError("expected true or false")

    def structure_int(value: Any, _: type) -> int:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError("expected a whole number")
        if isinstance(value, float) and not value.is_integer():
            raise ValueError("expected a whole number")
        return int(value)

    def structure_float(value: Any, _: type) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError("expected a number")
        return float(value)

    def structure_str(value: Any, _: type) -> str:
        if not isinstance(value, str):
            raise ValueError("expected a string")
        return value

    def structure_str_list(value: Any, _: type) -> list[str]:
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ValueError("expected a list of strings")
        return list(value)

    converter.register_structure_hook(bool, structure_bool)
    converter.register_structure_hook(int, structure_int)
    converter.register_structure_hook(float, structure_float)
    converter.register_structure_hook(str, structure_str)
    converter.register_structure_hook_func(lambda type_: type_ == list[str], structure_str_list)
    return converter


CONVERTER = _strict_converter()
_FIELDS = {field.name: field for field in dataclasses.fields(Settings)}
_TYPES = typing.get_type_hints(Settings)


def snake_case(key: str) -> str:
    """``runOnSave`` -> ``run_on_save``; ``diagnostics.static`` -> ``diagnostics_static``."""
    key = key.replace("-", "_").replace(".", "_")
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower()


def _describe(type_: Any) -> str:
    if typing.get_origin(type_) is Literal:
        return "one of " + ", ".join(repr(choice) for choice in typing.get_args(type_))
    if type_ == list[str]:
        return "a list of strings"
    names = {bool: "true or false", int: "a whole number", float: "a number", str: "a string"}
    return names.get(type_, getattr(type_, "__name__", str(type_)))


def _structure_field(name: str, value: Any) -> Any:
    type_ = _TYPES[name]
    optional = typing.get_origin(type_) in (typing.Union, types.UnionType)
    if optional and value is None:
        return None
    target = (
        next(arg for arg in typing.get_args(type_) if arg is not type(None)) if optional else type_
    )
    try:
        result = CONVERTER.structure(value, target)
    except (ValueError, TypeError, cattrs.errors.CattrsError) as error:
        raise ValueError(f"expected {_describe(target)}") from error
    if name in _POSITIVE and result <= 0:
        raise ValueError("must be greater than zero")
    if name in _NON_NEGATIVE and result < 0:
        raise ValueError("must not be negative")
    return result


def flatten(layer: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"diagnostics": {"static": False}}`` -> ``{"diagnostics.static": False}``.

    Only tables whose dotted names lead to a known field are opened, so a
    value that should have been a scalar is still reported as wrong.
    """
    flat: dict[str, Any] = {}
    for key, value in layer.items():
        name = f"{prefix}{key}"
        nested = isinstance(value, dict) and any(
            field.startswith(snake_case(name) + "_") for field in _FIELDS
        )
        if nested:
            flat.update(flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def _kept(value: Any) -> str:
    return "the default" if value is None else repr(value)


def merge(base: Settings, layer: dict[str, Any] | None, origin: str) -> tuple[Settings, list[str]]:
    """``base`` with the recognised keys of ``layer`` applied; returns (settings, problems).

    ``origin`` names the layer in problem messages ("pyproject.toml [tool.fullgraph]",
    "client settings").  Unknown keys are ignored: the table is shared with the CLI.
    """
    if not layer:
        return base, []
    if not isinstance(layer, dict):
        return base, [f"fullgraph: {origin} must be an object, got {type(layer).__name__}; ignored"]
    changes: dict[str, Any] = {}
    problems: list[str] = []
    for raw_key, value in flatten(layer).items():
        name = snake_case(str(raw_key))
        if name not in _FIELDS:
            continue
        try:
            changes[name] = _structure_field(name, value)
        except ValueError as error:
            problems.append(
                f"fullgraph: {origin}: `{raw_key}` = {value!r} is invalid ({error}); "
                f"using {_kept(getattr(base, name))}"
            )
    return dataclasses.replace(base, **changes), problems


def pyproject_table(root: Path) -> tuple[dict[str, Any], list[str]]:
    """The ``[tool.fullgraph]`` table of ``root/pyproject.toml`` (empty when absent)."""
    path = root / "pyproject.toml"
    if not path.is_file():
        return {}, []
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        return {}, [f"fullgraph: cannot read {path}: {error}; using defaults"]
    table = data.get("tool", {}).get("fullgraph", {})
    return (
        (table, [])
        if isinstance(table, dict)
        else ({}, [f"fullgraph: {path}: [tool.fullgraph] is not a table"])
    )


def client_section(payload: Any) -> dict[str, Any] | None:
    """The fullgraph part of what a client sent: ``{"fullgraph": {...}}`` or the section itself."""
    if isinstance(payload, dict) and isinstance(payload.get("fullgraph"), dict):
        return payload["fullgraph"]
    return payload if isinstance(payload, dict) else None


def resolve(root: Path | None, client: Any = None) -> tuple[Settings, list[str]]:
    """Defaults, then ``[tool.fullgraph]`` under ``root``, then the client's settings."""
    problems: list[str] = []
    settings = Settings()
    if root is not None:
        table, read_problems = pyproject_table(root)
        problems += read_problems
        settings, layer_problems = merge(settings, table, "pyproject.toml [tool.fullgraph]")
        problems += layer_problems
    settings, layer_problems = merge(settings, client_section(client), "client settings")
    return settings, problems + layer_problems
