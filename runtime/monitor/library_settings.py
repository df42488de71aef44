"""Plain settings of torch's own objects, read on behalf of code that runs unobserved.

A torch layer's ``forward`` and a torch hook object's ``__call__`` (the
``SpectralNorm`` / ``WeightNorm`` pre-hooks of ``torch.nn.utils``, a pruning
method) run in torch's Python, which the monitor does not step into.  What they
read of their own object (``p``, ``n_power_iterations``, ``eps``, ``dim``,
``activation``...) is guarded here, so a setting changed between calls is a miss.
"""

from __future__ import annotations

import functools
import types
from typing import Any

import torch

from fullgraph.runtime.monitor.user_code import is_setting
from fullgraph.runtime.sources import AttrSource, ItemSource, LenSource, Source

# A function-valued setting (``TransformerEncoderLayer.activation = F.gelu``): the
# forward calls it, so the guard checks it by identity.
_CALLED_SETTINGS = (types.FunctionType, types.BuiltinFunctionType, functools.partial)


def read_settings(run: Any, owner: Any, source: Source, skip: tuple[str, ...] = ()) -> None:
    """Every public plain setting in ``owner``'s instance dict."""
    for name, value in vars(owner).items():
        if name.startswith("_") or name in skip:
            continue
        if (id(owner), name) in run.written:
            stored_by_the_call(run, owner, name)
        else:
            read_setting(run, AttrSource(source, name), value)


def stored_by_the_call(run: Any, owner: Any, name: str) -> None:
    """``drop.p = p`` earlier in the call: the layer reads what the program stored, not
    what the slot held at entry (the previous call's store), and the graph takes it as
    a constant, so a number that varies (a lifted argument, a schedule's value) is
    guarded by value from here on."""
    key = (id(owner), name)  # or stored as ``layer.__dict__[name] = s`` (its other name)
    for stored in run.stored_entries(key):
        run.concretize(stored[1])


def read_setting(run: Any, source: Source, value: Any) -> None:
    """Guard one plain setting: a literal by value, a list item by item
    (``AdaptiveAvgPool2d([2, 2])``, also changed in place), a ``torch.Size`` by
    value and type, a function by identity.  Other objects are not settings."""
    if is_setting(value) or (isinstance(value, torch.Size) and is_setting(tuple(value))):
        run.read(source, value, symbolic=False)
    elif type(value) is list and is_setting(tuple(value)):
        run.read(source, value, symbolic=False)  # its type
        run.read(LenSource(source), len(value), symbolic=False)
        for index, item in enumerate(value):
            run.read(ItemSource(source, index), item, symbolic=False)
    elif isinstance(value, _CALLED_SETTINGS):
        run.read(source, value, symbolic=False)
