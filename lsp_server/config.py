"""The ``[tool.fullgraph]`` configuration: what to analyze and under which limits.

The table lives in the project's ``pyproject.toml``; editor settings may override
single keys.  Values are structured into :class:`Config` with cattrs, using
strict hooks (a string is never silently accepted where a list or a number is
expected), and every problem is reported as a :class:`ConfigError` that names
the key, the value found and what was expected, so the user can fix the file
without reading our code.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import cattrs
from cattrs.errors import (
    AttributeValidationNote,
    ClassValidationError,
    ForbiddenExtraKeysError,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

TABLE = "tool.fullgraph"
BACKENDS = ("inductor", "eager")


class ConfigError(Exception):
    """A configuration value is missing, malformed or of the wrong kind."""

    def __init__(self, key: str, value: Any, expected: str, *, source: str | None = None):
        self.key = key
        self.value = value
        self.expected = expected
        self.source = source
        where = f"{source}: " if source else ""
        super().__init__(f"{where}{key} = {value!r}: expected {expected}")

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "ConfigError",
            "message": str(self),
            "traceback": "",
            "key": self.key,
            "value": _jsonable(self.value),
            "expected": self.expected,
        }


@dataclasses.dataclass
class Config:
    """Settings for analysis; every field has a default so an empty table works."""

    # "package.module:function" names of zero-argument functions returning
    # (callable, args) or (callable, args, kwargs); see docs/entrypoints.md.
    entrypoints: list[str] = dataclasses.field(default_factory=list)
    # Seconds one entrypoint may run (worker start-up is not counted).
    timeout: float = 60.0
    # Memory cap (RLIMIT_DATA) of the worker process in MiB; 0 disables the cap.
    memory_mb: int = 4096
    # Graph compiler for timing runs (the demo); reports need none.
    backend: str = "inductor"
    # Interpreter that runs user code; None means the one running fullgraph.
    python: str | None = None


# What each field type is called in error messages.
_EXPECTED = {
    "entrypoints": 'a list of "package.module:function" strings',
    "timeout": "a positive number of seconds",
    "memory_mb": "a non-negative integer (MiB; 0 disables the cap)",
    "backend": "one of " + ", ".join(repr(b) for b in BACKENDS),
    "python": "a path to a Python interpreter",
}


def _strict_str(value: Any, _type: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("not a string")
    return value


def _strict_float(value: Any, _type: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError("not a number")
    return float(value)


def _strict_int(value: Any, _type: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("not an integer")
    return value


def _strict_str_list(value: Any, _type: Any) -> list[str]:
    # The default hook would iterate a string character by character.
    if not isinstance(value, (list, tuple)):
        raise TypeError("not a list")
    return [_strict_str(item, str) for item in value]


def _make_converter() -> cattrs.Converter:
    converter = cattrs.Converter(forbid_extra_keys=True)
    converter.register_structure_hook(str, _strict_str)
    converter.register_structure_hook(float, _strict_float)
    converter.register_structure_hook(int, _strict_int)
    # Generic aliases cannot go through singledispatch; match them by predicate.
    converter.register_structure_hook_func(lambda t: t == list[str], _strict_str_list)
    return converter


_converter = _make_converter()


def config_from_mapping(
    data: Mapping[str, Any], *, table: str = TABLE, source: str | None = None
) -> Config:
    """Structure and validate one table of settings (pyproject or editor settings)."""
    if not isinstance(data, Mapping):
        raise ConfigError(table, data, "a table of settings", source=source)
    try:
        config = _converter.structure(dict(data), Config)
    except ClassValidationError as group:
        raise _first_error(group, data, table, source) from None
    _validate(config, table, source)
    return config


def load_config(root: Path, overrides: Mapping[str, Any] | None = None) -> Config:
    """Read ``[tool.fullgraph]`` from ``root/pyproject.toml`` and apply overrides.

    A missing file or table gives the defaults; ``overrides`` (for example the
    editor's settings) replace single keys and are validated the same way.
    """
    pyproject = Path(root) / "pyproject.toml"
    table: Mapping[str, Any] = {}
    if pyproject.is_file():
        try:
            document = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(
                "pyproject.toml", str(exc), "a valid TOML file", source=str(pyproject)
            ) from None
        table = document.get("tool", {}).get("fullgraph", {})
        if not isinstance(table, Mapping):
            raise ConfigError(TABLE, table, "a table of settings", source=str(pyproject))
    config = config_from_mapping(table, source=str(pyproject) if table else None)
    if overrides:
        merged = {**dataclasses.asdict(config), **dict(overrides)}
        config = config_from_mapping(merged, table="settings", source=None)
    return config


def _first_error(
    group: ClassValidationError, data: Mapping[str, Any], table: str, source: str | None
) -> ConfigError:
    """Turn cattrs' exception group into one error naming key, value and expectation."""
    for exc in group.exceptions:
        if isinstance(exc, ForbiddenExtraKeysError):
            name = min(exc.extra_fields)
            known = ", ".join(f.name for f in dataclasses.fields(Config))
            return ConfigError(
                f"{table}.{name}", data.get(name), f"a known setting ({known})", source=source
            )
        for note in getattr(exc, "__notes__", []):
            if isinstance(note, AttributeValidationNote):
                value = data.get(note.name)
                return ConfigError(
                    f"{table}.{note.name}",
                    value,
                    _EXPECTED.get(note.name, "a valid value"),
                    source=source,
                )
    return ConfigError(table, dict(data), "a valid [tool.fullgraph] table", source=source)


def _validate(config: Config, table: str, source: str | None) -> None:
    """Checks on values that have the right type but make no sense."""
    from fullgraph.lsp_server.entrypoints import parse_entrypoint

    for index, text in enumerate(config.entrypoints):
        parse_entrypoint(text, key=f"{table}.entrypoints[{index}]", source=source)
    if not config.timeout > 0:
        raise ConfigError(f"{table}.timeout", config.timeout, _EXPECTED["timeout"], source=source)
    if config.memory_mb < 0:
        raise ConfigError(
            f"{table}.memory_mb", config.memory_mb, _EXPECTED["memory_mb"], source=source
        )
    if config.backend not in BACKENDS:
        raise ConfigError(f"{table}.backend", config.backend, _EXPECTED["backend"], source=source)
    if config.python is not None and not config.python.strip():
        raise ConfigError(f"{table}.python", config.python, _EXPECTED["python"], source=source)


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return repr(value)


__all__ = ["BACKENDS", "Config", "ConfigError", "config_from_mapping", "load_config"]
