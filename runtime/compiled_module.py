"""A compiled ``nn.Module`` is a module too, so a parent registers it as a submodule.

``self.proj = fullgraph.runtime.compile(nn.Linear(4, 4))`` must leave ``proj``'s
parameters in the parent's ``parameters()`` and ``state_dict()`` (an optimizer
trains them, a checkpoint saves them) and let ``parent.train()``, ``.to()`` and
``.load_state_dict()`` reach it, as torch.compile's ``OptimizedModule`` does.

The compiled object keeps no module state of its own: ``_parameters``,
``_buffers``, ``_modules``, the hook dicts and ``training`` are looked up on the
module it compiles (``CompiledFunction.__getattr__``) and written there
(``__setattr__``), so nn.Module's own methods, run on it, read and change the
module's state; the methods the module's class overrides
(``BatchNorm._load_from_state_dict``, ``RNN._apply``, ``extra_repr``, a custom
``train``) are the class's, bound to the module.  Unlike ``OptimizedModule`` it
adds no ``_orig_mod.`` to the parent's keys: its state_dict is eager's.
"""

from __future__ import annotations

import functools
import types
from typing import Any

import torch

from fullgraph.runtime.compiled import CompiledFunction, returning_self

# nn.Module attributes that are always the compiled module's: ``compiled.forward(x)``
# is the module's forward, uncompiled; registering a buffer, parameter or submodule
# registers it on the module (torch checks the module's own ``__dict__`` for that).
_ALWAYS_THE_MODULES = frozenset(
    [
        "forward",
        "_get_name",
        "extra_repr",
        "register_buffer",
        "register_parameter",
        "add_module",
        "register_module",
    ]
)


class CompiledModule(CompiledFunction, torch.nn.Module):
    """What ``fullgraph.runtime.compile`` returns for an ``nn.Module``."""

    def __reduce__(self):
        return (_compile_again, self._constructor_arguments())

    @property
    def __class__(self) -> type:  # see _parametrized_class
        if self.__dict__.get("_parametrized_module"):
            return type(self.__dict__["module"])
        return type(self)

    @__class__.setter
    def __class__(self, value: type) -> None:
        module = self.__dict__.get("module")
        if self.__dict__.get("_parametrized_module") and value in type(module).__bases__:
            # remove_parametrizations: the module gets its class back.
            _OBJECT_CLASS.__set__(module, value)
            object.__setattr__(self, "_parametrized_module", False)
            return
        target = _parametrized_class(self, value)
        if target is None:
            _OBJECT_CLASS.__set__(self, value)
            return
        _OBJECT_CLASS.__set__(module, target)
        object.__setattr__(self, "_parametrized_module", True)


_OBJECT_CLASS = object.__dict__["__class__"]


def _parametrized_class(compiled: CompiledModule, value: type) -> type | None:
    """``register_parametrization(compiled, "weight", ...)`` (``spectral_norm``,
    ``weight_norm``) gives the module a subclass that holds the parametrized tensor
    as a property.  The compiled module's state is the module's, so the module gets
    that class (its forward reads ``self.weight``), and ``compiled.__class__`` is the
    module's from then on, where torch adds the property.  None: another class."""
    module = compiled.__dict__.get("module")
    if module is None or value.__bases__ != (type(compiled),):
        return None
    if not value.__name__.startswith("Parametrized"):
        return None
    own = {k: v for k, v in vars(value).items() if k not in ("__dict__", "__weakref__")}
    return type(f"Parametrized{type(module).__name__}", (type(module),), own)


@functools.cache
def compiled_module_class(module_class: type) -> type:
    """The CompiledModule class for modules of ``module_class``: the nn.Module methods
    that class overrides are looked up on the module."""
    own = {  # what the class and its bases below nn.Module define
        name
        for klass in module_class.__mro__
        if klass is not torch.nn.Module and issubclass(klass, torch.nn.Module)
        for name in vars(klass)
    }
    overridden = _ALWAYS_THE_MODULES | {
        name for name in own if hasattr(torch.nn.Module, name) and not name.startswith("__")
    }
    namespace = {name: _ModuleAttribute(name) for name in sorted(overridden)}
    namespace["__repr__"] = lambda self: f"fullgraph.compile({self.module!r})"
    namespace["__module__"] = __name__
    name = f"Compiled{module_class.__name__}"
    # The module's class among the bases, after fullgraph's: ``isinstance(m, nn.Linear)``
    # over ``parent.modules()`` (an init or a weight-decay grouping) finds the compiled
    # layer as it finds eager's.  Not for a class that takes over every attribute
    # lookup, nor one whose layout can't be combined.
    namespace["_module_class"] = module_class
    if "__getattribute__" not in own:
        try:
            meta = _class_of_compiled_classes(type(module_class))
            return meta(name, (CompiledModule, module_class), namespace)
        except TypeError:
            pass
    return _class_of_compiled_classes(type)(name, (CompiledModule,), namespace)


def construct(kind: type, *arguments: Any, **options: Any) -> Any:
    """An instance of a compiled class (``kind(...)`` makes a module of the module's
    class: see ``_class_of_compiled_classes``)."""
    return type.__call__(kind, *arguments, **options)


@functools.cache
def _class_of_compiled_classes(base: type) -> type:
    """The metaclass of compiled classes whose module classes have metaclass ``base``.

    ``type(model)`` of a compiled module is its compiled class, so what the program
    does to ``type(model)`` is done to the module's class: ``type(model).scale = 7.0``
    (the module reads ``Net.scale``), ``del type(model).x``, and ``type(model)(cfg)``
    (an EMA copy, ``self.__class__(config)``), which makes a module of that class as
    eager's does.  Dunder names stay the compiled class's own."""

    def module_class(cls: type, name: str) -> type | None:
        """Where a write or delete of ``name`` goes (None: the compiled class)."""
        dunder = name.startswith("__") and name.endswith("__")
        return None if dunder else cls.__dict__.get("_module_class")

    def __setattr__(cls, name: str, value: Any) -> None:
        target = module_class(cls, name)
        if target is None:
            base.__setattr__(cls, name, value)
        else:
            setattr(target, name, value)

    def __delattr__(cls, name: str) -> None:
        target = module_class(cls, name)
        if target is None:
            base.__delattr__(cls, name)
        else:
            delattr(target, name)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls.__dict__["_module_class"](*args, **kwargs)

    methods = {"__setattr__": __setattr__, "__delattr__": __delattr__, "__call__": __call__}
    return type(base)(f"Compiled{base.__name__}", (base,), methods)


class _ModuleAttribute:
    """A class attribute read from the compiled module (a method bound to it, which
    returns the compiled object where it returns the module)."""

    def __init__(self, name: str):
        self.name = name

    def __get__(self, compiled: Any, owner: type | None = None) -> Any:
        if compiled is None:
            return self
        module = compiled.module
        value = getattr(module, self.name)
        if isinstance(value, types.MethodType) and value.__self__ is module:
            return returning_self(value, module, compiled)
        return value


def _compile_again(target, *arguments):
    return construct(compiled_module_class(type(target)), target, *arguments)
