"""Entrypoints: the ``"package.module:function"`` names a user points fullgraph at.

An entrypoint is a zero-argument function in the user's project that builds a
model and sample inputs and returns ``(callable, args)`` or
``(callable, args, kwargs)`` (docs/entrypoints.md).  Parsing happens in the
calling process (no user code runs); :func:`load_entrypoint` imports and calls
it, and runs only inside the analysis worker.  Every way an entrypoint can be
wrong is a :class:`~fullgraph.lsp_server.errors.ConfigError` naming the key,
the value and what was expected; an exception raised *by* the user's code is
not, and propagates unchanged.
"""

from __future__ import annotations

import dataclasses
import importlib
import keyword
import sys
from collections.abc import Callable, Mapping
from typing import Any

from fullgraph.lsp_server.errors import ConfigError

FORMAT = '"package.module:function" (a zero-argument function, see docs/entrypoints.md)'
RETURN_SHAPE = "the entrypoint to return (callable, args) or (callable, args, kwargs)"


@dataclasses.dataclass(frozen=True)
class Entrypoint:
    module: str  # dotted module name, importable with the project root on sys.path
    function: str  # attribute path inside the module, usually one name

    def __str__(self) -> str:
        return f"{self.module}:{self.function}"


@dataclasses.dataclass
class Target:
    """What an entrypoint returned: the callable to analyze and how to call it."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


def _is_dotted_name(text: str) -> bool:
    parts = text.split(".")
    return all(part.isidentifier() and not keyword.iskeyword(part) for part in parts)


def parse_entrypoint(text: Any, *, key: str = "entry", source: str | None = None) -> Entrypoint:
    """Check the syntax of ``"package.module:function"``; imports nothing."""
    if not isinstance(text, str):
        raise ConfigError(key, text, FORMAT, source=source)
    module, sep, function = text.strip().partition(":")
    if not sep or not _is_dotted_name(module) or not _is_dotted_name(function):
        raise ConfigError(key, text, FORMAT, source=source)
    return Entrypoint(module, function)


def _is_missing_module(exc: ModuleNotFoundError, module: str) -> bool:
    """True when the entrypoint's own module (or a parent package) does not exist.

    A ModuleNotFoundError raised by an import *inside* the user's module is the
    user's error and is reported with its traceback instead.
    """
    parts = module.split(".")
    prefixes = {".".join(parts[: i + 1]) for i in range(len(parts))}
    return exc.name in prefixes


def load_entrypoint(entry: Entrypoint, *, key: str = "entry") -> Callable[[], Any]:
    """Import the entrypoint's module and return the zero-argument function."""
    try:
        obj: Any = importlib.import_module(entry.module)
    except ModuleNotFoundError as exc:
        if not _is_missing_module(exc, entry.module):
            raise
        raise ConfigError(
            key, str(entry), f"an importable module ({exc}; is the project root on sys.path?)"
        ) from None
    for part in entry.function.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ConfigError(
                key, str(entry), f"module {entry.module!r} to define {entry.function!r}"
            ) from None
    if not callable(obj):
        raise ConfigError(key, str(entry), f"{entry.function!r} to be a function, not {_a(obj)}")
    return obj


def _a(value: Any) -> str:
    """``"an int"``, ``"a tuple"``: the kind of a value, for error messages."""
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiouAEIOU' else 'a'} {name}"


def unpack_target(returned: Any, entry: Entrypoint, *, key: str = "entry") -> Target:
    """Validate the entrypoint's return value: (callable, args[, kwargs])."""
    if not isinstance(returned, tuple) or len(returned) not in (2, 3):
        size = f" of length {len(returned)}" if isinstance(returned, tuple) else ""
        raise ConfigError(key, str(entry), f"{RETURN_SHAPE}; it returned {_a(returned)}{size}")
    fn, args = returned[0], returned[1]
    kwargs = returned[2] if len(returned) == 3 else {}
    if not callable(fn):
        raise ConfigError(
            key, str(entry), f"{RETURN_SHAPE} whose first item is callable, not {_a(fn)}"
        )
    if not isinstance(args, (tuple, list)):
        raise ConfigError(
            key, str(entry), f"{RETURN_SHAPE} with args a tuple or list, not {_a(args)}"
        )
    if not isinstance(kwargs, Mapping) or not all(isinstance(k, str) for k in kwargs):
        raise ConfigError(
            key, str(entry), f"{RETURN_SHAPE} with kwargs a dict of str keys, not {_a(kwargs)}"
        )
    return Target(fn, tuple(args), dict(kwargs))


def build_target(entry: Entrypoint, *, key: str = "entry") -> Target:
    """Import, call and validate an entrypoint.  Runs user code: worker only."""
    factory = load_entrypoint(entry, key=key)
    return unpack_target(factory(), entry, key=key)


def reached_functions(target: Target) -> list[dict[str, str]]:
    """Where an analysis of ``target`` runs: ``{"file", "qualname"}`` of its function
    and of the ``forward`` of every module (and submodule) it was handed.

    So "Analyze" on ``Block.forward`` finds the entrypoint whose ``Model`` holds
    a ``Block``.  Worker only (it inspects the user's objects).
    """
    import inspect

    torch = sys.modules.get("torch")
    module_type = getattr(getattr(torch, "nn", None), "Module", None)
    found: list[dict[str, str]] = []

    def add(function: Any) -> None:
        function = inspect.unwrap(getattr(function, "__func__", function))
        try:
            file = inspect.getsourcefile(function)
        except TypeError:
            return
        qualname = getattr(function, "__qualname__", None)
        entry = {"file": str(file), "qualname": str(qualname)}
        if file and qualname and entry not in found:
            found.append(entry)

    for value in (target.fn, *target.args, *target.kwargs.values()):
        if module_type is not None and isinstance(value, module_type):
            for module in value.modules():
                add(type(module).forward)
        elif value is target.fn and callable(value):
            add(value)
    return found
