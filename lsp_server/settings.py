"""fullgraph's one settings model, read by the CLI, the language server and the extension.

:class:`Settings` lists every setting once, with its type, default, who reads
it (``cli``, ``server``, ``both``, or ``extension`` for the one key only the
VS Code client uses) and a line of documentation; docs/configuration.md's
table is generated from it (:func:`settings_table`), and a test keeps the
VS Code extension's ``contributes.configuration`` in step with it.

Layers are merged key by key: the defaults, the ``[tool.fullgraph]`` table of
the workspace's ``pyproject.toml``, and (in the server) what the client sends
(``initializationOptions`` at start, ``workspace/didChangeConfiguration`` or
``workspace/configuration`` later).  Keys may be snake_case, kebab-case or
camelCase (``run_on_save``, ``run-on-save``, ``runOnSave``), flat or nested
(``{"diagnostics": {"static": false}}``).  One cattrs converter structures
every value, with strict hooks so that ``"no"`` does not become ``True`` and
``"abc"`` does not become a list of letters.

:func:`merge` never raises: it returns the merged settings and a list of
:class:`Problem` values.  A bad value keeps the previous layer's value; an
unknown key is ignored with a warning that names it and the known keys.  The
server shows both with ``window/showMessage``; the CLI
(:mod:`fullgraph.lsp_server.config`) stops on a bad value and prints the
warnings to stderr.
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
READERS = ("cli", "server", "both", "extension")

# Where rule documentation lives when the workspace has no docs/rules/<CODE>.md
# or docs/codes/<CODE>.md of its own (a user's project usually has neither).
DEFAULT_DOCS_BASE_URL = "https://github.com/fullgraph/fullgraph/blob/main/docs"


def _setting(
    default: Any = dataclasses.MISSING,
    *,
    read_by: str,
    doc: str,
    expected: str | None = None,
    minimum: float | None = None,
    exclusive: bool = False,
    factory: Any = dataclasses.MISSING,
) -> Any:
    """A field of :class:`Settings` with what the docs table and the error messages need.

    ``minimum`` (``exclusive``: the minimum itself is refused) bounds numbers;
    ``expected`` is what an error message says a valid value is.
    """
    assert read_by in READERS, read_by
    metadata = {
        "read_by": read_by,
        "doc": doc,
        "expected": expected,
        "minimum": minimum,
        "exclusive": exclusive,
    }
    if factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


@dataclasses.dataclass
class Settings:
    """Everything fullgraph can be configured with, each with a working default."""

    entrypoints: list[str] = _setting(  # noqa: RUF009 - returns dataclasses.field
        factory=list,
        read_by="both",
        doc='`"package.module:function"` builders (see entrypoints.md) analysed by '
        "`fullgraph check`, on save and by the `fullgraph.analyze` command.",
        expected='a list of "package.module:function" strings',
    )
    timeout: float = _setting(
        60.0,
        read_by="both",
        doc="Seconds one entrypoint may run (worker start-up not counted).",
        expected="a positive number of seconds",
        minimum=0,
        exclusive=True,
    )
    memory_mb: int = _setting(
        4096,
        read_by="both",
        doc="Memory cap (RLIMIT_DATA) of the analysis worker in MiB; 0 disables it.",
        expected="a non-negative integer (MiB; 0 disables the cap)",
        minimum=0,
    )
    backend: Backend = _setting(  # noqa: RUF009 - returns dataclasses.field
        "inductor",
        read_by="both",
        doc="Graph compiler for compiled wrappers and timing runs (`inductor` or `eager`).",
    )
    python: str | None = _setting(
        None,
        read_by="both",
        doc="Interpreter that runs the user's code (the analysis worker); unset: the one "
        "running fullgraph.",
        expected="a path to a Python interpreter",
    )
    run_on_save: bool = _setting(
        True, read_by="server", doc="Analyse the entrypoints whenever a Python file is saved."
    )
    debounce_ms: int = _setting(
        150,
        read_by="server",
        doc="Milliseconds after the last keystroke before the static rules run.",
        expected="a non-negative whole number of milliseconds",
        minimum=0,
    )
    diagnostics_static: bool = _setting(
        True, read_by="server", doc="Show the static rules (FG1xx) as you type."
    )
    # Off in an untrusted workspace: analysis executes the project's code.
    diagnostics_runtime: bool = _setting(
        True,
        read_by="server",
        doc="Run entrypoints at all (the VS Code extension sends `false` in an untrusted "
        "workspace: analysis runs the project's code).",
    )
    ignore: list[str] = _setting(  # noqa: RUF009 - returns dataclasses.field
        factory=list,
        read_by="both",
        doc='Codes whose findings `fullgraph check` and the editor hide, e.g. `["FG104"]`.',
        expected="a list of strings",
    )
    break_severity: Severity = _setting(  # noqa: RUF009 - returns dataclasses.field
        "warning",
        read_by="server",
        doc="Severity of runtime graph breaks in the editor; failed analyses are errors.",
    )
    docs_base_url: str = _setting(
        DEFAULT_DOCS_BASE_URL,
        read_by="server",
        doc="Where code links point when the workspace has no docs/codes or docs/rules page.",
    )
    compiled_dir: str = _setting(
        ".fullgraph/compiled",
        read_by="server",
        doc='Folder, under the workspace root, where "Compile this function" puts the wrapper.',
    )
    interpreter: list[str] = _setting(  # noqa: RUF009 - returns dataclasses.field
        factory=list,
        read_by="extension",
        doc="Command (interpreter and fixed arguments) that starts the language server; "
        "the server ignores it.",
        expected="a list of strings",
    )


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
FIELDS = {field.name: field for field in dataclasses.fields(Settings)}
_TYPES = typing.get_type_hints(Settings)
KNOWN_KEYS = tuple(FIELDS)


def snake_case(key: str) -> str:
    """``runOnSave`` -> ``run_on_save``; ``diagnostics.static`` -> ``diagnostics_static``."""
    key = key.replace("-", "_").replace(".", "_")
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower()


def client_key(name: str) -> str:
    """The key a client (VS Code: ``fullgraph.<key>``) writes: ``runOnSave``, ``diagnostics.static``."""
    if name.startswith("diagnostics_"):
        return "diagnostics." + name.removeprefix("diagnostics_")
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def table_key(name: str) -> str:
    """The key ``[tool.fullgraph]`` writes: ``run_on_save``, ``diagnostics.static``."""
    return (
        "diagnostics." + name.removeprefix("diagnostics_")
        if name.startswith("diagnostics_")
        else name
    )


def _target_type(name: str) -> tuple[Any, bool]:
    """(the type a value is structured to, whether None is allowed)."""
    type_ = _TYPES[name]
    optional = typing.get_origin(type_) in (typing.Union, types.UnionType) and type(None) in (
        typing.get_args(type_)
    )
    if optional:
        type_ = next(arg for arg in typing.get_args(type_) if arg is not type(None))
    return type_, optional


def describe_type(name: str) -> str:
    """What a valid value of setting ``name`` is, in words."""
    expected = FIELDS[name].metadata["expected"]
    if expected:
        return expected
    type_, _ = _target_type(name)
    if typing.get_origin(type_) is Literal:
        return "one of " + ", ".join(repr(choice) for choice in typing.get_args(type_))
    if type_ == list[str]:
        return "a list of strings"
    names = {bool: "true or false", int: "a whole number", float: "a number", str: "a string"}
    return names.get(type_, getattr(type_, "__name__", str(type_)))


def structure_value(name: str, value: Any) -> Any:
    """``value`` as setting ``name`` holds it; ValueError (saying what is expected) if invalid."""
    type_, optional = _target_type(name)
    if optional and value is None:
        return None
    try:
        result = CONVERTER.structure(value, type_)
    except (ValueError, TypeError, cattrs.errors.CattrsError) as error:
        raise ValueError(f"expected {describe_type(name)}") from error
    metadata = FIELDS[name].metadata
    minimum = metadata["minimum"]
    if minimum is not None and (result <= minimum if metadata["exclusive"] else result < minimum):
        raise ValueError(f"expected {describe_type(name)}")
    if name == "python" and not result.strip():
        raise ValueError(f"expected {describe_type(name)}")
    return result


@dataclasses.dataclass(frozen=True)
class Problem:
    """Something wrong with one layer: a bad value, an unknown key, or the layer itself."""

    kind: str  # "invalid" | "unknown" | "layer"
    origin: str  # "pyproject.toml [tool.fullgraph]", "client settings", a file path
    key: str = ""  # as the layer spelled it (dotted when nested)
    value: Any = None
    expected: str = ""  # what a valid value is (invalid) or the reason (layer)
    kept: Any = None  # the value used instead of a bad one

    @property
    def message(self) -> str:
        if self.kind == "unknown":
            return (
                f"fullgraph: {self.origin}: unknown setting `{self.key}` ignored "
                f"(known settings: {', '.join(table_key(name) for name in KNOWN_KEYS)})"
            )
        if self.kind == "invalid":
            kept = "the default" if self.kept is None else repr(self.kept)
            return (
                f"fullgraph: {self.origin}: `{self.key}` = {self.value!r} is invalid "
                f"({self.expected}); using {kept}"
            )
        return f"fullgraph: {self.origin}: {self.expected}"

    def __str__(self) -> str:
        return self.message


def flatten(layer: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"diagnostics": {"static": False}}`` -> ``{"diagnostics.static": False}``.

    Only tables whose dotted names lead to a known field are opened, so a
    value that should have been a scalar is still reported as wrong.
    """
    flat: dict[str, Any] = {}
    for key, value in layer.items():
        name = f"{prefix}{key}"
        nested = isinstance(value, dict) and any(
            field.startswith(snake_case(name) + "_") for field in FIELDS
        )
        if nested:
            flat.update(flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def merge(
    base: Settings, layer: dict[str, Any] | None, origin: str
) -> tuple[Settings, list[Problem]]:
    """``base`` with the keys of ``layer`` applied; returns (settings, problems).

    ``origin`` names the layer in problem messages ("pyproject.toml
    [tool.fullgraph]", "client settings").
    """
    if not layer:
        return base, []
    if not isinstance(layer, dict):
        reason = f"must be an object, got {type(layer).__name__}; ignored"
        return base, [Problem("layer", origin, expected=reason)]
    changes: dict[str, Any] = {}
    problems: list[Problem] = []
    for raw_key, value in flatten(layer).items():
        name = snake_case(str(raw_key))
        if name not in FIELDS:
            problems.append(Problem("unknown", origin, str(raw_key), value))
            continue
        try:
            changes[name] = structure_value(name, value)
        except ValueError as error:
            problems.append(
                Problem("invalid", origin, str(raw_key), value, str(error), getattr(base, name))
            )
    return dataclasses.replace(base, **changes), problems


def pyproject_table(root: Path) -> tuple[dict[str, Any], list[Problem]]:
    """The ``[tool.fullgraph]`` table of ``root/pyproject.toml`` (empty when absent)."""
    path = root / "pyproject.toml"
    if not path.is_file():
        return {}, []
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        return {}, [
            Problem("layer", str(path), expected=f"cannot read it: {error}; using defaults")
        ]
    table = data.get("tool", {}).get("fullgraph", {})
    if isinstance(table, dict):
        return table, []
    return {}, [Problem("layer", str(path), expected="[tool.fullgraph] is not a table")]


def client_section(payload: Any) -> dict[str, Any] | None:
    """The fullgraph part of what a client sent: ``{"fullgraph": {...}}`` or the section itself."""
    if isinstance(payload, dict) and isinstance(payload.get("fullgraph"), dict):
        return payload["fullgraph"]
    return payload if isinstance(payload, dict) else None


def resolve(root: Path | None, client: Any = None) -> tuple[Settings, list[Problem]]:
    """Defaults, then ``[tool.fullgraph]`` under ``root``, then the client's settings."""
    problems: list[Problem] = []
    settings = Settings()
    if root is not None:
        table, read_problems = pyproject_table(root)
        problems += read_problems
        settings, layer_problems = merge(settings, table, "pyproject.toml [tool.fullgraph]")
        problems += layer_problems
    settings, layer_problems = merge(settings, client_section(client), "client settings")
    return settings, problems + layer_problems


# -- documentation ---------------------------------------------------------------

_READ_BY = {
    "both": "CLI, server",
    "cli": "CLI",
    "server": "server",
    "extension": "VS Code extension",
}


def _default_text(field: dataclasses.Field) -> str:
    if field.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return f"`{field.default_factory()!r}`"  # type: ignore[misc]
    if field.default is None:
        return "unset"
    if isinstance(field.default, bool):
        return f"`{str(field.default).lower()}`"
    if isinstance(field.default, str):
        return f'`"{field.default}"`'
    return f"`{field.default!r}`"


def settings_table() -> str:
    """The Markdown table of every setting, as docs/configuration.md shows it."""
    rows = [
        (
            "| `[tool.fullgraph]` key | Client key (`fullgraph.` in VS Code) | Type | Default "
            "| Read by | Meaning |"
        ),
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, field in FIELDS.items():
        rows.append(
            f"| `{table_key(name)}` | `{client_key(name)}` | {describe_type(name)} "
            f"| {_default_text(field)} | {_READ_BY[field.metadata['read_by']]} "
            f"| {field.metadata['doc']} |"
        )
    return "\n".join(rows) + "\n"
