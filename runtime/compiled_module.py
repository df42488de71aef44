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

# nn.Module attributes that are always the compiled module's (``compiled.forward(x)``
# is the module's forward, uncompiled, as before it was a module).
_ALWAYS_THE_MODULES = frozenset(["forward", "_get_name", "extra_repr", "__repr__"])


class CompiledModule(CompiledFunction, torch.nn.Module):
    """What ``fullgraph.runtime.compile`` returns for an ``nn.Module``."""

    def __reduce__(self):
        return (_compile_again, self._constructor_arguments())


def compiled_module_class(module_class: type) -> type:
    """The CompiledModule class for modules of ``module_class``: the nn.Module methods
    that class overrides are looked up on the module."""
    return _class_for(module_class)


@functools.cache
def _class_for(module_class: type) -> type:
    overridden = set(_ALWAYS_THE_MODULES)
    for klass in module_class.__mro__:
        if klass is torch.nn.Module or not issubclass(klass, torch.nn.Module):
            continue
        overridden.update(
            name
            for name in vars(klass)
            if hasattr(torch.nn.Module, name) and not name.startswith("__")
        )
    overridden.discard("__init__")
    namespace = {name: _ModuleAttribute(name) for name in sorted(overridden)}
    namespace["__repr__"] = lambda self: f"fullgraph.compile({self.module!r})"
    namespace["__module__"] = __name__
    return type(f"Compiled{module_class.__name__}", (CompiledModule,), namespace)


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
    return compiled_module_class(type(target))(target, *arguments)
