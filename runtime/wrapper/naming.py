"""How the generated module names the program's objects.

``importable`` is the expression that gives an object itself in a fresh process
(an import by its qualified name), ``definition`` where a function or class
without one is defined.  The module keeps some names for itself (its helpers,
``compile``, ``RECORDS``, ``guard_<k>`` ...): a constant of the program by one of
them is renamed in its guard and mock (``is_own_name``).
"""

from __future__ import annotations

import builtins
import enum
import importlib
import re
import sys
import types
from typing import Any

import torch

from fullgraph.runtime.record.mock_support import HELPERS
from fullgraph.runtime.wrapper.support import resolve

# Names the module defines for itself.  A constant of the program by one of these
# names (re.compile is "compile") is renamed in its guard and mock.
OWN_NAMES = frozenset(
    [
        *HELPERS,
        "importlib",
        "torch",
        "builtins",
        "RECORDS",
        "STATS",
        "BACKEND",
        "ENTRYPOINT",
        "compile",
        "compiled",
    ]
)
OWN_PATTERN = re.compile(
    r"(guard|mock|bind)_\d+|(Graph|Check)\d+\w*|_(mock|support|TARGET_KIND|TARGET_NAME|COMPILED)"
)
_OWN_OBJECTS = {"importlib": importlib, "torch": torch, "builtins": builtins}
# fx's code names these globals itself; the module defines the ones a class uses.
FX_GLOBALS = {
    "inf": 'float("inf")',
    "nan": 'float("nan")',
    "NoneType": "type(None)",
    "device": "torch.device",
}


def is_own_name(name: str, value: Any) -> bool:
    """Whether ``name`` is one the module needs for something other than ``value``."""
    if name in _OWN_OBJECTS:
        return _OWN_OBJECTS[name] is not value
    return name in OWN_NAMES or bool(OWN_PATTERN.fullmatch(name))


def importable(value: Any) -> str | None:
    """An expression that gives ``value`` itself in a fresh process, or None."""
    if isinstance(value, types.ModuleType):
        if sys.modules.get(value.__name__) is value:
            return f"importlib.import_module({value.__name__!r})"
        return None
    if isinstance(value, torch.device):
        return f"torch.device({str(value)!r})"
    if type(value) is tuple:  # the hooks of a module, when each has a name
        items = [importable(item) for item in value]
        if all(items):
            return "(" + "".join(f"{item}, " for item in items).rstrip(" ") + ")"
        return None
    if isinstance(value, dict) and isinstance(value.get("__name__"), str):
        # A module's globals (``builtins`` and ``sys`` have no ``__builtins__`` of their own).
        module = sys.modules.get(value["__name__"])
        if value.get("__builtins__") is not None or getattr(module, "__dict__", None) is value:
            return _globals_dict(value)
    owner = getattr(value, "__objclass__", None)
    if isinstance(value, enum.Enum):  # a member: its class's attribute
        module, names = type(value).__module__, [f"{type(value).__qualname__}.{value.name}"]
    elif isinstance(owner, type) and isinstance(getattr(value, "__name__", None), str):
        module, names = owner.__module__, [f"{owner.__qualname__}.{value.__name__}"]
    else:
        module = getattr(value, "__module__", None)
        bound_to = getattr(value, "__self__", None)
        if module is None and isinstance(bound_to, types.ModuleType):
            module = bound_to.__name__  # print, math.sqrt
        # torch's builtins say "_VariableFunctionsClass.relu" but are torch.relu;
        # boolean_dispatch's "fn" is torch.functional.unique
        names = [getattr(value, "__qualname__", None), getattr(value, "__name__", None)]
    if not isinstance(module, str):
        return None
    for name in dict.fromkeys(names):
        if not isinstance(name, str) or "<" in name:
            continue
        try:
            found = resolve(module, name)
        except Exception:  # noqa: BLE001, S112 - not reachable by that name
            continue
        if found is value:
            return f"_support.resolve({module!r}, {name!r})"
    return None


def _globals_dict(value: dict) -> str | None:
    """``vars(<module>)`` for a module's globals (``_collections_abc`` calls itself
    ``collections.abc``, so the module is looked for by its dict)."""
    key = value["__name__"]
    if getattr(sys.modules.get(key), "__dict__", None) is not value:
        found = (k for k, m in list(sys.modules.items()) if getattr(m, "__dict__", None) is value)
        key = next(found, None)
    if key is None:
        return None
    return f"vars(importlib.import_module({key!r}))"


def definition(value: Any) -> str | None:
    """``"module:qualname[:line]"`` of a function or class without an importable name."""
    if isinstance(value, types.FunctionType):
        return f"{value.__module__}:{value.__qualname__}:{value.__code__.co_firstlineno}"
    if isinstance(value, type):
        return f"{value.__module__}:{value.__qualname__}"
    return None
