"""The CLI's reading of ``[tool.fullgraph]``: the shared settings model, strictly.

The table lives in the project's ``pyproject.toml``; the model and its
structuring are :mod:`fullgraph.lsp_server.settings`, the same the language
server reads (:data:`Config` is :class:`~fullgraph.lsp_server.settings.Settings`).
The CLI is stricter than the server in one way: a bad value is a
:class:`~fullgraph.lsp_server.errors.ConfigError` that names the key, the
value found and what was expected (exit code 2), so the user can fix the file
without reading our code.  An unknown key is a warning naming it and the known keys, never a
refusal: the table is shared with the editor's settings.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from fullgraph.lsp_server.entrypoints import parse_entrypoint
from fullgraph.lsp_server.errors import ConfigError
from fullgraph.lsp_server.settings import Settings, merge

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

TABLE = "tool.fullgraph"
BACKENDS = ("inductor", "eager")


# The CLI and the language server read one model (docs/configuration.md).
Config = Settings


def _warn_to_stderr(message: str) -> None:
    print(f"fullgraph: warning: {message.removeprefix('fullgraph: ')}", file=sys.stderr)


def config_from_mapping(
    data: Mapping[str, Any],
    *,
    table: str = TABLE,
    source: str | None = None,
    base: Config | None = None,
    warn: Callable[[str], None] | None = _warn_to_stderr,
) -> Config:
    """Structure and validate one table of settings over ``base`` (default: the defaults).

    A bad value raises :class:`ConfigError`; an unknown key is handed to ``warn``
    (a message naming it and the known keys) and ignored.
    """
    if not isinstance(data, Mapping):
        raise ConfigError(table, data, "a table of settings", source=source)
    config, problems = merge(base or Config(), dict(data), source or table)
    for problem in problems:
        if problem.kind == "invalid":
            raise ConfigError(
                f"{table}.{problem.key}",
                problem.value,
                problem.expected.removeprefix("expected "),
                source=source,
            )
        if warn is not None:
            warn(problem.message)
    _validate(config, table, source)
    return config


def load_config(
    root: Path,
    overrides: Mapping[str, Any] | None = None,
    *,
    warn: Callable[[str], None] | None = _warn_to_stderr,
) -> Config:
    """Read ``[tool.fullgraph]`` from ``root/pyproject.toml`` and apply overrides.

    A missing file or table gives the defaults; ``overrides`` (for example the
    editor's settings) replace single keys and are validated the same way.
    Unknown keys are reported through ``warn`` (stderr by default), not refused.
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
    config = config_from_mapping(table, source=str(pyproject) if table else None, warn=warn)
    if overrides:
        config = config_from_mapping(overrides, table="settings", base=config, warn=warn)
    return config


def _validate(config: Config, table: str, source: str | None) -> None:
    """Checks the types cannot express: each entrypoint's syntax."""
    for index, text in enumerate(config.entrypoints):
        parse_entrypoint(text, key=f"{table}.entrypoints[{index}]", source=source)


__all__ = ["BACKENDS", "Config", "config_from_mapping", "load_config"]
