"""Sources: where a value came from, as a path from the function's external state.

Guards, mocks and graph inputs share this one vocabulary.  Every generated
function (guard, mock, wrapper) receives the same parameters, so a source's
``expr()`` is valid Python in all of them:

- ``A``: the positional arguments (tuple), ``K``: the keyword arguments (dict),
- ``M``: the module instance being compiled (``None`` for plain functions),
- ``F``: the compiled function, and named constants such as a module's globals
  dict (``g_mymodel``), bound into the generated code's namespace.
"""

from __future__ import annotations

import dataclasses
import keyword
import re


class Source:
    """A path from external state to a value."""

    def expr(self) -> str:
        raise NotImplementedError

    def __str__(self) -> str:
        return self.expr()

    def local_name(self) -> str:
        """A readable identifier for a generated local holding this value."""
        name = re.sub(r"\W+", "_", self.expr()).strip("_")
        return ("v_" + name)[:60] if name else "v"


@dataclasses.dataclass(frozen=True, eq=True)
class ArgSource(Source):
    index: int

    def expr(self) -> str:
        return f"A[{self.index}]"


@dataclasses.dataclass(frozen=True, eq=True)
class KwargSource(Source):
    name: str

    def expr(self) -> str:
        return f"K[{self.name!r}]"


@dataclasses.dataclass(frozen=True, eq=True)
class RootModuleSource(Source):
    def expr(self) -> str:
        return "M"


@dataclasses.dataclass(frozen=True, eq=True)
class RootFunctionSource(Source):
    def expr(self) -> str:
        return "F"


@dataclasses.dataclass(frozen=True, eq=True)
class ConstSource(Source):
    """A value bound by name in the generated code's namespace (e.g. a globals dict)."""

    name: str

    def expr(self) -> str:
        return self.name


@dataclasses.dataclass(frozen=True, eq=True)
class AttrSource(Source):
    base: Source
    name: str

    def expr(self) -> str:
        if self.name.isidentifier() and not keyword.iskeyword(self.name):
            return f"{self.base.expr()}.{self.name}"
        return f"getattr({self.base.expr()}, {self.name!r})"


@dataclasses.dataclass(frozen=True, eq=True)
class ItemSource(Source):
    base: Source
    key: object  # int, str, or a tuple of them: anything with an evaluable repr

    def expr(self) -> str:
        return f"{self.base.expr()}[{self.key!r}]"


@dataclasses.dataclass(frozen=True, eq=True)
class CellSource(Source):
    """The content of closure cell ``index`` of the function at ``function``."""

    function: Source
    index: int

    def expr(self) -> str:
        return f"{self.function.expr()}.__closure__[{self.index}].cell_contents"


def is_key_representable(key: object) -> bool:
    """Whether ``repr(key)`` evaluates back to an equal key (safe in generated code)."""
    if isinstance(key, bool) or key is None:
        return True
    if type(key) in (int, str):
        return True
    if type(key) is tuple:
        return all(is_key_representable(k) for k in key)
    return False


@dataclasses.dataclass(frozen=True, eq=True)
class LenSource(Source):
    """``len(base)``: read when the program takes a container's length."""

    base: Source

    def expr(self) -> str:
        return f"len({self.base.expr()})"


@dataclasses.dataclass(frozen=True, eq=True)
class KeysSource(Source):
    """``tuple(base.keys())``: read when the program iterates a mapping."""

    base: Source

    def expr(self) -> str:
        return f"tuple({self.base.expr()}.keys())"


@dataclasses.dataclass(frozen=True, eq=True)
class ContainsSource(Source):
    """``key in base``: read by ``in`` tests and ``hasattr``-style probes."""

    base: Source
    key: object

    def expr(self) -> str:
        return f"({self.key!r} in {self.base.expr()})"


@dataclasses.dataclass(frozen=True, eq=True)
class HasAttrSource(Source):
    base: Source
    name: str

    def expr(self) -> str:
        return f"hasattr({self.base.expr()}, {self.name!r})"


@dataclasses.dataclass(frozen=True, eq=True)
class HookCountSource(Source):
    """How many hooks a module has: adding one after recording must miss the guard."""

    base: Source

    def expr(self) -> str:
        base = self.base.expr()
        return (
            f"(len({base}._forward_pre_hooks) + len({base}._forward_hooks)"
            f" + len({base}._backward_pre_hooks) + len({base}._backward_hooks))"
        )

    def local_name(self) -> str:
        return self.base.local_name() + "_hook_count"


def base_of(source: Source) -> Source | None:
    return getattr(source, "base", None) or getattr(source, "function", None)
