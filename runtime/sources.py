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

import builtins
import dataclasses
import functools
import keyword
import math
import re
from typing import Any

import torch


class Source:
    """A path from external state to a value.

    Sources are immutable, so each one's ``expr()`` is computed once: guards of
    large models render thousands of paths, each the path of its base and a step.
    """

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "expr" in cls.__dict__:
            cls.expr = _computed_once(cls.__dict__["expr"])

    def expr(self) -> str:
        raise NotImplementedError

    def __str__(self) -> str:
        return self.expr()

    def __getstate__(self) -> dict:
        # A string's hash differs between processes: a pickled source is hashed anew.
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

    def local_name(self) -> str:
        """A readable identifier for a generated local holding this value."""
        name = re.sub(r"\W+", "_", self.expr()).strip("_")
        return ("v_" + name)[:60] if name else "v"


def source_class(cls):
    """A frozen dataclass whose hash is computed once: a source is a chain of sources
    (``M.encoder.layer[0].attn``), hashed on every dict lookup of the guard's reads,
    and the generated hash walks the whole chain each time."""
    cls = dataclasses.dataclass(frozen=True, eq=True)(cls)
    generated = cls.__hash__

    def __hash__(self) -> int:
        try:
            return self.__dict__["_hash"]
        except KeyError:
            value = generated(self)
            object.__setattr__(self, "_hash", value)  # frozen: not a field, not compared
            return value

    cls.__hash__ = __hash__
    return cls


def _computed_once(expr):
    @functools.wraps(expr)
    def cached(self) -> str:
        try:
            return self.__dict__["_expr"]
        except KeyError:
            text = expr(self)
            object.__setattr__(self, "_expr", text)  # frozen: not a field, not compared
            return text

    return cached


@source_class
class ArgSource(Source):
    index: int

    def expr(self) -> str:
        return f"A[{self.index}]"


@source_class
class KwargSource(Source):
    name: str

    def expr(self) -> str:
        return f"K[{self.name!r}]"


@source_class
class RootModuleSource(Source):
    def expr(self) -> str:
        return "M"


@source_class
class RootFunctionSource(Source):
    def expr(self) -> str:
        return "F"


@source_class
class ConstSource(Source):
    """A value bound by name in the generated code's namespace (e.g. a globals dict)."""

    name: str

    def expr(self) -> str:
        return self.name


@source_class
class AttrSource(Source):
    base: Source
    name: str

    def expr(self) -> str:
        if self.name.isidentifier() and not keyword.iskeyword(self.name):
            return f"{self.base.expr()}.{self.name}"
        return f"getattr({self.base.expr()}, {self.name!r})"


@source_class
class ItemSource(Source):
    base: Source
    key: object  # a key with text (``key_text``), a KeyPath, or a tuple of them

    def expr(self) -> str:
        return f"{self.base.expr()}[{_key_expr(self.key)}]"


@source_class
class CellSource(Source):
    """The content of closure cell ``index`` of the function at ``function``."""

    function: Source
    index: int

    def expr(self) -> str:
        return f"{self.function.expr()}.__closure__[{self.index}].cell_contents"


@source_class
class KeyPath:
    """A dict key the generated code reaches by where the program got it, for a key
    with no text of its own (a class, an Enum member, any other object): ``BY_ENUM[
    g_m['K'].A]``.  The lookup is the one the program makes with the object now at that
    path, which the rest of the guard holds to the run's."""

    source: Source


def key_text(key: Any) -> str | None:
    """Python that evaluates to a key equal to ``key`` in generated code, or None.

    Strings, ints, None, bools, bytes, finite floats and infinities, ``torch.float32``,
    ``torch.device('cuda:0')``, builtin classes (``int``), a :class:`KeyPath`'s path,
    and tuples of these.  Not NaN: a NaN key is found only by identity.
    """
    if isinstance(key, KeyPath):
        return key.source.expr()
    if isinstance(key, bool) or key is None or type(key) in (int, str, bytes):
        return repr(key)
    if type(key) is float:
        if math.isnan(key):
            return None
        if math.isinf(key):
            return "float('inf')" if key > 0 else "float('-inf')"
        return repr(key)
    if type(key) is tuple:
        parts = [key_text(k) for k in key]
        if any(part is None for part in parts):
            return None
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
    if isinstance(key, torch.dtype):
        return str(key)  # "torch.float32"
    if type(key) is torch.device:
        return f"torch.device({str(key)!r})"
    if isinstance(key, type) and getattr(builtins, key.__name__, None) is key:
        return key.__name__  # int, float, str...
    return None


def _key_expr(key: Any) -> str:
    text = key_text(key)
    return repr(key) if text is None else text


def has_path(key: Any) -> bool:
    """Whether ``key`` is (or holds) a :class:`KeyPath`: only Python can evaluate it."""
    if isinstance(key, KeyPath):
        return True
    return type(key) is tuple and any(has_path(k) for k in key)


def is_key_representable(key: object) -> bool:
    """Whether ``key`` has text of its own in generated code (``key_text``, no path)."""
    return not has_path(key) and key_text(key) is not None


@source_class
class LenSource(Source):
    """``len(base)``: read when the program takes a container's length."""

    base: Source

    def expr(self) -> str:
        return f"len({self.base.expr()})"


@source_class
class IterItemsSource(Source):
    """``tuple(base)``: the items of a set, deque, range... in iteration order.

    Read when the program iterates an external container whose iteration the
    monitor does not observe item by item (C code): equal sets can iterate in
    different orders, so the order is part of what the guard compares.
    """

    base: Source

    def expr(self) -> str:
        return f"tuple({self.base.expr()})"

    def local_name(self) -> str:
        return self.base.local_name() + "_items"


@source_class
class KeysSource(Source):
    """``tuple(base.keys())``: read when the program iterates a mapping; with ``upto``,
    its first ``upto`` keys (a walk that stopped on the way)."""

    base: Source
    upto: int | None = None

    def expr(self) -> str:
        keys = f"tuple({self.base.expr()}.keys())"
        return keys if self.upto is None else f"{keys}[:{self.upto}]"


@source_class
class ContainsSource(Source):
    """``key in base``: read by ``in`` tests and ``hasattr``-style probes."""

    base: Source
    key: object

    def expr(self) -> str:
        return f"({_key_expr(self.key)} in {self.base.expr()})"


@source_class
class LookupSource(Source):
    """What ``base.name`` finds when the class provides it (a method, a property): an
    instance attribute of that name if one shadows it now, else the class's attribute
    (class access returns a function or the property object itself, running nothing)."""

    base: Source
    name: str

    def expr(self) -> str:
        base = self.base.expr()
        return f"{base}.__dict__.get({self.name!r}, type({base}).{self.name})"

    def local_name(self) -> str:
        return f"{self.base.local_name()}_lookup_{self.name}"


@source_class
class TypeOfSource(Source):
    """``type(base)``: the class of an object from outside (``type(self).n += 1``)."""

    base: Source

    def expr(self) -> str:
        return f"type({self.base.expr()})"

    def local_name(self) -> str:
        return self.base.local_name() + "_type"


@source_class
class IdSource(Source):
    """``id(base)``: read when the program keys something by an object's identity."""

    base: Source

    def expr(self) -> str:
        return f"id({self.base.expr()})"

    def local_name(self) -> str:
        return self.base.local_name() + "_id"


@source_class
class IndexSource(Source):
    """``operator.index(base)``: the int an object with a Python ``__index__`` gives,
    which torch asks for in C when the object indexes a tensor (``x[I]``)."""

    base: Source

    def expr(self) -> str:
        base = self.base.expr()
        return f"type({base}).__index__({base})"


@source_class
class HasAttrSource(Source):
    base: Source
    name: str

    def expr(self) -> str:
        return f"hasattr({self.base.expr()}, {self.name!r})"


@source_class
class TruthSource(Source):
    """Whether a container of torch's or Python's own is non-empty (``if self.cache:``)."""

    base: Source

    def expr(self) -> str:
        return f"bool({self.base.expr()})"


_MODULE_HOOK_DICTS = (
    "_forward_pre_hooks",
    "_forward_hooks",
    "_backward_pre_hooks",
    "_backward_hooks",
)
_GLOBAL_HOOK_DICTS = (
    "_global_forward_pre_hooks",
    "_global_forward_hooks",
    "_global_backward_pre_hooks",
    "_global_backward_hooks",
)


@source_class
class HooksSource(Source):
    """The hooks a module runs around its forward and backward, in order.

    Compared by identity (a tuple of the hook functions), so a hook swapped for
    another, added or removed after recording misses the guard.
    """

    base: Source

    def expr(self) -> str:
        base = self.base.expr()
        return "(" + ", ".join(f"*{base}.{d}.values()" for d in _MODULE_HOOK_DICTS) + ")"

    def local_name(self) -> str:
        return self.base.local_name() + "_hooks"


@source_class
class GlobalHooksSource(Source):
    """Hooks registered for every module (``register_module_forward_hook`` and friends)."""

    def expr(self) -> str:
        owner = "torch.nn.modules.module"
        return "(" + ", ".join(f"*{owner}.{d}.values()" for d in _GLOBAL_HOOK_DICTS) + ")"

    def local_name(self) -> str:
        return "v_global_module_hooks"


def module_hooks(module) -> tuple:
    """What :class:`HooksSource` reads."""
    return tuple(hook for d in _MODULE_HOOK_DICTS for hook in getattr(module, d).values())


def global_module_hooks() -> tuple:
    """What :class:`GlobalHooksSource` reads."""
    import torch.nn.modules.module as module_py

    return tuple(hook for d in _GLOBAL_HOOK_DICTS for hook in getattr(module_py, d).values())


def base_of(source: Source) -> Source | None:
    return getattr(source, "base", None) or getattr(source, "function", None)
