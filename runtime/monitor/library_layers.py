"""Torch's own layers, which run unobserved: what the guard checks of them.

A library layer's ``forward`` (``nn.Linear``, ``nn.GELU``, an ``nn.Sequential``)
runs in torch's code, which the monitor does not step into.  Its plain settings
(``training``, ``p``, ``negative_slope``...), its children and the module-level
functions its ``forward`` calls (``F.gelu``) are read here on the run's behalf,
so a setting changed or a function patched between calls is a miss.
"""

from __future__ import annotations

import dis
import functools
import types

import torch
from torch.nn.utils import parametrize

from fullgraph.runtime.monitor import hook_sources, library_settings
from fullgraph.runtime.monitor.user_code import has_user_forward
from fullgraph.runtime.sources import (
    AttrSource,
    ConstSource,
    ItemSource,
    KeysSource,
    Source,
    TypeOfSource,
)


def guard_library_module(run, module: torch.nn.Module, source: Source) -> None:
    """A torch layer runs unobserved: guard the plain settings its forward reads.

    ``training``, ``negative_slope``, ``p``, ``momentum``, ``dim``... and the
    same for the layers it calls in turn (an ``nn.Sequential``'s children).
    """
    guard_library_globals(run, type(module))
    # Setting by setting, not one dict-version check: a model switched to eval()
    # and back to train() must hit its train-mode record again.
    if (id(module), "training") not in run.written:  # else set by ``train()`` in the run
        run.read(AttrSource(source, "training"), module.training, symbolic=False)
    hook_sources.guard_hooks(run, module, source)
    if "parametrizations" in module._modules:
        guard_parametrize_cache(run)
    library_settings.read_settings(run, module, source, skip=("training",))
    _guard_tensor_slots(run, module, source)
    # A container layer runs every child in order (an nn.Sequential, the ModuleList
    # of an nn.TransformerEncoder): which children, and of what kind (a Sigmoid
    # swapped for a Tanh has no setting that tells them apart).
    container = bool(module._modules) or isinstance(module, torch.nn.Sequential)
    if container:
        modules = AttrSource(source, "_modules")
        run.read(KeysSource(modules), tuple(module._modules), symbolic=False)
    for name, child in module._modules.items():
        child_source = AttrSource(source, name)
        if container:
            run.read(TypeOfSource(child_source), type(child), symbolic=False)
        if child is None:
            continue
        run.register(child, child_source)
        if has_user_forward(child):  # its __call__ (hooks included) runs unobserved too
            hook_sources.guard_hooks(run, child, child_source)
            run.register_module_tree(child, child_source)
        else:
            guard_library_module(run, child, child_source)


def guard_parametrize_cache(run) -> None:
    """A parametrized weight is computed by torch's Python, read by a layer or by the
    program (``parametrized.guard``); inside ``parametrize.cached()`` it is the first
    one computed, reused while the block lasts, which no graph can replay."""
    cache = ItemSource(ConstSource(run.globals_name(vars(parametrize))), "_cache_enabled")
    run.read(cache, parametrize._cache_enabled, symbolic=False)
    if parametrize._cache_enabled:
        run.refuse("a parametrized weight inside parametrize.cached() is a cached one")


def _guard_tensor_slots(run, module: torch.nn.Module, source: Source) -> None:
    """The layer's parameters and buffers, as its forward will read them.

    A slot that holds None (``Linear(bias=False)``, a bias removed) is checked to
    still hold None: the graph has no input for it, so a bias set again must miss.
    A tensor the run already knows by another path (a weight tied to an embedding's)
    is checked to be the same object here too: the graph reads it once, by that path.
    """
    for slots in (module._parameters, module._buffers):
        for name, value in slots.items():
            own = AttrSource(source, name)
            if value is None:
                run.read(own, None, symbolic=False)
                continue
            first = run.layer_slots.setdefault(id(value), own)
            known = run.sources.get(id(value))
            if known is None and first != own:  # two layers' slots, before any use
                run.read(first, value)
                known = first
            if known is not None and known != own:
                run.read(own, value, symbolic=False)  # an aliasing check with ``known``


def guard_library_globals(run, layer: type) -> None:
    """The module-level functions a torch layer's forward calls (``F.gelu`` in
    ``nn.GELU``): guarded by identity, so one patched between calls is seen."""
    forward = getattr(layer, "forward", None)
    if not isinstance(forward, types.FunctionType) or layer in run.guarded_layers:
        return
    run.guarded_layers.add(layer)
    module_globals = forward.__globals__
    for owner_name, attribute in global_attribute_loads(forward.__code__):
        owner = module_globals.get(owner_name)
        if not isinstance(owner, types.ModuleType) or not hasattr(owner, attribute):
            continue
        owner_source = ItemSource(ConstSource(run.globals_name(module_globals)), owner_name)
        run.read(owner_source, owner, symbolic=False)
        value = getattr(owner, attribute)
        run.read(AttrSource(owner_source, attribute), value, symbolic=False)


@functools.cache
def global_attribute_loads(code: types.CodeType) -> tuple[tuple[str, str], ...]:
    """``(module name, attribute)`` for each ``F.gelu``-style load in ``code``."""
    loads = []
    previous = None
    for ins in dis.get_instructions(code):
        if (
            ins.opname in ("LOAD_ATTR", "LOAD_METHOD")
            and previous is not None
            and previous.opname == "LOAD_GLOBAL"
        ):
            loads.append((previous.argval, ins.argval))
        previous = ins
    return tuple(dict.fromkeys(loads))
