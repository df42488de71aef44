"""Which code the monitor steps into (user code), and facts about library layers.

Opaque: the standard library (but for the Python classes of ``collections`` and
``collections.abc``), torch, numpy and fullgraph itself.  Everything else,
third-party model code such as ``transformers`` included, is stepped into like
the user's own.
"""

from __future__ import annotations

import inspect
import os
import sys
import sysconfig
import types
from typing import Any

import torch

# fullgraph.runtime itself (this file is in runtime/monitor/).
_RUNTIME_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


_TORCH_DIR = os.path.join(os.path.realpath(os.path.dirname(torch.__file__)), "")


def is_torch_file(filename: str) -> bool:
    """Code of torch's own Python (its ``@contextmanager`` generators, its layers)."""
    return os.path.realpath(filename).startswith(_TORCH_DIR)


def _package_dirs() -> tuple[str, ...]:
    """torch, numpy and fullgraph itself: libraries the monitor treats as opaque."""
    dirs = [
        os.path.dirname(torch.__file__),
        _RUNTIME_DIR,
        os.path.join(os.path.dirname(_RUNTIME_DIR), "refactors"),
    ]
    try:
        import numpy

        dirs.append(os.path.dirname(numpy.__file__))
    except ImportError:
        pass
    return tuple(os.path.join(os.path.realpath(d), "") for d in dirs)


def _stdlib_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    return tuple({os.path.join(os.path.realpath(paths[k]), "") for k in ("stdlib", "platstdlib")})


_OPAQUE_PACKAGES = _package_dirs()
# The mixins of collections.abc, and collections' Python classes (Counter, UserList,
# UserDict, ChainMap): their methods change the object through its own stores, which
# the monitor records where it steps into them (an opaque ``Counter.update`` was taken
# for dict's, ``UserList.append`` for a read).
_STEPPED_STDLIB = (
    os.sep + "_collections_abc.py",
    os.sep + os.path.join("collections", "__init__.py"),
)
_STEPPED_FROZEN = frozenset(["<frozen _collections_abc>"])
_STDLIB = _stdlib_dirs()
_user_code_cache: dict[types.CodeType, bool] = {}
_user_file_cache: dict[str, bool] = {}


def is_user_code(code: types.CodeType) -> bool:
    """Code the monitor steps into: everything but the stdlib, torch, numpy and fullgraph.

    Third-party model code (``transformers``, ...) is stepped into like the user's own.
    """
    cached = _user_code_cache.get(code)
    if cached is None:
        cached = _user_code_cache[code] = is_user_file(code.co_filename)
    return cached


def is_user_file(filename: str) -> bool:
    """Whether code from ``filename`` is the program's (see :func:`is_user_code`)."""
    cached = _user_file_cache.get(filename)
    if cached is None:
        if filename in _STEPPED_FROZEN:
            # The collections.abc mixins (Mapping.get, __contains__ ...) only call the
            # program's own __getitem__ / __iter__: stepped into, so what those read
            # is guarded like any other read.
            cached = True
        elif filename.startswith("<frozen"):
            cached = False
        elif not os.path.isabs(filename):
            cached = True  # generated code such as a dataclass __init__
        else:
            path = os.path.realpath(filename)
            if path.startswith(_OPAQUE_PACKAGES):
                cached = False
            elif path.endswith(_STEPPED_STDLIB):
                cached = True  # the same mixins where they are not frozen
            elif "site-packages" in path or "dist-packages" in path:
                cached = True
            else:
                cached = not path.startswith(_STDLIB)
        _user_file_cache[filename] = cached
    return cached


def is_opaque_class(cls: type) -> bool:
    """A class of torch, numpy or fullgraph itself (defined in an opaque package)."""
    module = sys.modules.get(getattr(cls, "__module__", None) or "")
    filename = getattr(module, "__file__", None)
    return isinstance(filename, str) and os.path.realpath(filename).startswith(_OPAQUE_PACKAGES)


def has_user_forward(module: torch.nn.Module) -> bool:
    forward = getattr(type(module), "forward", None)
    code = getattr(forward, "__code__", None)
    return code is not None and is_user_code(code)


def is_setting(value: Any) -> bool:
    """A plain configuration value of a layer (guarded by value)."""
    if value is None or type(value) in (bool, int, float, str):
        return True
    return type(value) is tuple and all(is_setting(v) for v in value)


def property_getter(cls: type, name: str) -> Any:
    """The getter of the property ``name`` is on ``cls`` (None: another attribute, or none)."""
    for klass in cls.__mro__:
        attribute = klass.__dict__.get(name)
        if attribute is not None:
            return attribute.fget if isinstance(attribute, property) else None
    return None


def user_property(cls: type, name: str) -> bool:
    getter = property_getter(cls, name)
    return hasattr(getter, "__code__") and is_user_code(getter.__code__)


def compiled_inner_target(fn: Any) -> tuple[Any, Any] | None:
    """For a fullgraph-compiled callable called inside a monitored run: the compiled
    object and what it stands for (its function or module, bound to the instance when
    it decorates a method); else None.

    The outer run steps into it as plain code: the inner object's replay would read
    what its guard checks out of the outer run's sight (a global the inner function
    reads), and the outer record would keep the value it saw.
    """
    compiled = fn.__func__ if isinstance(fn, types.MethodType) else fn
    if not getattr(type(compiled), "inlined_when_monitored", False):
        return None
    target = compiled.fn
    if isinstance(fn, types.MethodType) and not isinstance(target, torch.nn.Module):
        target = types.MethodType(target, fn.__self__)
    return compiled, target


def is_program_function(fn: Any) -> bool:
    """A Python function of the program's code (a class's own ``__setitem__``,
    ``__iadd__``, ``append``), which the monitor steps into when it runs."""
    return isinstance(fn, types.FunctionType) and is_user_code(fn.__code__)


def library_class(owner: Any, method: str) -> type | None:
    """The first class along ``type(owner)``'s MRO defining ``method`` other than as the
    program's code (``dict`` for a ``dict`` subclass whose ``__getitem__`` transforms,
    ``nn.Module`` for a module class with its own ``__delattr__``)."""
    for klass in type(owner).__mro__:
        found = vars(klass).get(method)
        if found is not None and not is_program_function(found):
            return klass
    return None


# Classes whose ``__setattr__`` / ``__delattr__`` store into the instance's ``__dict__``
# (a class's, a module's), a slot, or a module's parameter / buffer / submodule dicts,
# running no code that could take the value apart.
_PLAIN_STORAGE = (object, type, types.ModuleType, types.SimpleNamespace, torch.nn.Module)
PLAIN_SETATTRS = tuple(kind.__setattr__ for kind in _PLAIN_STORAGE)
PLAIN_DELATTRS = tuple(kind.__delattr__ for kind in _PLAIN_STORAGE)


def store_code(owner: Any, name: str | None) -> Any:
    """The Python function a store into ``owner`` runs with the value, if any: a
    property's setter or a descriptor's ``__set__`` for ``owner.name = v``, the class's
    ``__setattr__``, or its ``__setitem__`` for ``owner[k] = v`` (``name`` None).
    torch's own ``Module.__setattr__`` and plain slots are not counted."""
    if name is None:
        method = getattr(type(owner), "__setitem__", None)
        return method if isinstance(method, types.FunctionType) else None
    return _attribute_code(owner, name, "__setattr__", PLAIN_SETATTRS, "fset", "__set__")


def delete_code(owner: Any, name: str) -> Any:
    """The Python function ``del owner.name`` runs, if any: the class's own
    ``__delattr__``, a property's deleter or a descriptor's ``__delete__``."""
    return _attribute_code(owner, name, "__delattr__", PLAIN_DELATTRS, "fdel", "__delete__")


def _attribute_code(owner: Any, name: str, method: str, plain: tuple, accessor: str, slot: str):
    """The class's own ``method`` (other than the ``plain`` ones), else the property's
    ``accessor`` or the descriptor's ``slot`` method for ``name``; None for a plain slot."""
    kind = type(owner)
    found = getattr(kind, method, None)
    if found not in plain:
        return found
    try:
        descriptor = inspect.getattr_static(kind, name, None)
    except Exception:  # noqa: BLE001 - an odd metaclass: no descriptor known
        return None
    if isinstance(descriptor, property):
        return getattr(descriptor, accessor)
    if isinstance(descriptor, types.MemberDescriptorType):
        return None
    return getattr(type(descriptor), slot, None)


def store_runs_code(owner: Any, name: str | None) -> bool:
    """Whether a store into ``owner`` hands the value to code (see :func:`store_code`)."""
    return store_code(owner, name) is not None


def store_runs_user_code(owner: Any, name: str | None, delete: bool = False) -> bool:
    """Whether that code (``delete``: :func:`delete_code`'s) is the program's own, which
    the monitor steps into: its own stores are the effects, the store itself replays
    nothing more."""
    code = getattr(
        delete_code(owner, name) if delete else store_code(owner, name), "__code__", None
    )
    return code is not None and is_user_code(code)


_LIBRARY_CLASSES = ("torch", "collections", "typing", "dataclasses", "functools", "enum")


def constructs_here(fn: Any) -> bool:
    """A user class (its ``__init__`` is stepped into) or a Python class of a library
    (``warnings.catch_warnings``, a namedtuple): an object this run makes, not a callout."""
    module = getattr(fn, "__module__", None) or ""
    return isinstance(fn, type) and module != "builtins" and not module.startswith(_LIBRARY_CLASSES)


def steps_into(fn: Any) -> bool:
    """Whether the monitor follows a call into ``fn`` (user code: a function, a class
    whose ``__init__`` is the program's, an object whose ``__call__`` is)."""
    target = fn.__func__ if isinstance(fn, types.MethodType) else fn
    if isinstance(target, types.FunctionType):
        return is_user_code(target.__code__)
    if isinstance(fn, type):
        init = getattr(fn, "__init__", None)
        return isinstance(init, types.FunctionType) and is_user_code(init.__code__)
    call = getattr(type(fn), "__call__", None)  # noqa: B004 - the Python method, if any
    return isinstance(call, types.FunctionType) and is_user_code(call.__code__)
