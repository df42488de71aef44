"""Helpers shared by the guard and mock generators: names and constants.

Generated code must read like something a person wrote: constants that have
an evaluable ``repr`` (numbers, strings, ``torch.float32``) are written
inline; everything else (modules, functions, classes) is bound to a readable
name in the generated function's namespace.
"""

from __future__ import annotations

import builtins
import keyword
import math
import re
from typing import Any

import torch

LITERAL_TYPES = (bool, int, float, str, bytes, type(None), complex)
# Names the generated guard/mock/wrapper use for themselves: parameters, helpers,
# and locals (v_..., g0, c0, r0, s0).  A constant never takes one of them.
RESERVED = frozenset(
    [
        "A",
        "K",
        "M",
        "F",
        "I",
        "R",
        "made",
        "torch",
        "builtins",
        "MISS",
        "Missed",
        "Raised",
        "catching",
        "noting",
        "raised_as",
        "leaves",
        "make_dataclass_instance",
        "make_plain_object",
        "write_back",
        "guard",
        "mock",
        "compiled",
        "TARGET",
    ]
)
_GENERATED_LOCAL = re.compile(r"v_.*|[gcrs]\d+|graph\d+|Graph\d+")


def is_literal(value: Any) -> bool:
    """True for values whose ``repr`` evaluates back to an equal value."""
    if type(value) in LITERAL_TYPES:
        return not (isinstance(value, float) and math.isinf(value))
    if type(value) in (tuple, list, frozenset, set) or isinstance(value, torch.Size):
        return all(is_literal(v) for v in value)
    if type(value) is dict:
        return all(is_literal(k) and is_literal(v) for k, v in value.items())
    return isinstance(value, (torch.dtype,))


def literal(value: Any) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "float('nan')"
    if isinstance(value, float) and math.isinf(value):
        return "float('inf')" if value > 0 else "float('-inf')"
    if isinstance(value, torch.Size):
        return repr(tuple(value))
    if isinstance(value, torch.dtype):
        return str(value)  # "torch.float32"
    return repr(value)


class Namespace:
    """Names for the non-literal constants a generated function refers to."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {"torch": torch, "builtins": builtins}
        self._by_id: dict[int, str] = {id(torch): "torch", id(builtins): "builtins"}
        self._devices: dict[str, str] = {}
        # name -> source expression, for constants that are objects of the
        # program (a submodule, a config): the generated wrapper re-reads them.
        self.provenance: dict[str, str] = {}

    def bind(self, value: Any, hint: str, provenance: str | None = None) -> str:
        existing = self._by_id.get(id(value))
        if existing is not None:
            if provenance and existing not in self.provenance:
                self.provenance[existing] = provenance
            return existing
        base = re.sub(r"\W+", "_", hint).strip("_") or "const"
        if (
            base in RESERVED
            or keyword.iskeyword(base)  # a lambda's name, operator.is_'s "is" ...
            or _GENERATED_LOCAL.fullmatch(base)
            or base[0].isdigit()
            # ``__len__`` hints "len": bound as len, it would be what the generated
            # code's own ``len(...)`` calls.  (The builtin itself keeps its name.)
            or getattr(builtins, base, value) is not value
        ):
            base = f"k_{base}"
        name, n = base, 1
        while name in self.values:
            n += 1
            name = f"{base}_{n}"
        self.values[name] = value
        self._by_id[id(value)] = name
        if provenance:
            self.provenance[name] = provenance
        return name

    def name_for(self, value: Any) -> str:
        """A hint-derived name for a function, class or object constant."""
        hint = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
        if hint is None:
            hint = type(value).__name__.lower()
        return self.bind(value, hint)

    def expr(self, value: Any) -> str:
        if is_literal(value):
            return literal(value)
        if isinstance(value, torch.device):
            key = str(value)
            if key not in self._devices:
                self._devices[key] = self.bind(value, f"device_{key}")
            return self._devices[key]
        return self.name_for(value)


def compile_source(source: str, namespace: dict[str, Any], name: str, filename: str) -> Any:
    """Compile generated source; the source is registered with linecache for tracebacks."""
    import linecache

    code = compile(source, filename, "exec")
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    scope = dict(namespace)
    exec(code, scope)  # noqa: S102 - our own generated guard/mock source
    return scope[name]
