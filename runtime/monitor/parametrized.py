"""Tensors torch computes when they are read: ``torch.nn.utils.parametrize``.

``parametrizations.spectral_norm(m, "w")`` (and ``weight_norm``,
``orthogonal``, ``register_parametrization``) replaces ``m.w`` by a property
of a class torch makes for ``m``: each read runs the parametrization modules
on ``m.parametrizations.w.original`` in torch's Python, unobserved, and their
ops go into the graph.  The value is the run's own tensor, not one from
outside, so the guard must not read ``m.w`` again: that would run the
parametrization (spectral norm's power iteration, a counter, a dropout draw)
once more on every call.  It checks instead that ``m.w`` is still the same
property, and guards the parametrization modules as called ones, since they run
unobserved: a parametrization swapped or set to ``eval()`` is a miss.
"""

from __future__ import annotations

import types
from typing import Any

import torch

from fullgraph.runtime.monitor import library_layers, module_calls
from fullgraph.runtime.monitor.user_code import is_user_code, property_getter
from fullgraph.runtime.sources import AttrSource, Source


def computed_by_library_property(run: Any, owner: Any, name: str, value: Any) -> bool:
    """``owner.name`` ran a property of torch's (or another library's) that made
    ``value`` in this run: guard the property, not the value."""
    getter = property_getter(type(owner), name)
    if not isinstance(value, torch.Tensor) or not isinstance(getter, types.FunctionType):
        return False
    if is_user_code(getter.__code__):
        return False  # the program's own getter: stepped into
    # A parametrization that returns its input gives the original tensor (guarded
    # through the parametrization's slot by ``guard``); others give the run's own.
    return id(value) in run.tape.producer or _parametrized(owner, name)


def _parametrized(owner: Any, name: str) -> bool:
    parametrizations = getattr(owner, "__dict__", {}).get("_modules", {}).get("parametrizations")
    return isinstance(parametrizations, torch.nn.ModuleDict) and name in parametrizations


def guard(run: Any, owner: Any, source: Source, name: str) -> None:
    run.read_class_attribute(owner, source, name)
    if _parametrized(owner, name):
        chain = owner._modules["parametrizations"][name]
        chain_source = AttrSource(AttrSource(source, "parametrizations"), name)
        run.register(chain, chain_source)
        module_calls.guard_called_module(run, chain, chain_source)
        library_layers.guard_parametrize_cache(run)
