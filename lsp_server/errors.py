"""The one error a user's configuration can cause: :class:`ConfigError`.

Raised by the settings reading (:mod:`.config`), by entrypoint parsing and
loading (:mod:`.entrypoints`), and turned into a ``config_error`` result by the
analysis service and worker.  It names the key, the value found and what was
expected, so the user can fix the file without reading our code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


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


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return repr(value)
