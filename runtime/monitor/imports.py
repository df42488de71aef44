"""``import m`` and ``from m import x`` inside the function: the module has a path.

The module an import statement pushes is the object in ``sys.modules``; left
without a source, everything read from it (``m.scale``, ``from m import
scale``) would be taken as a constant of the run, and a later change of
``m.scale`` (a config module, a patched helper) would replay the old value.
So the module gets the source ``sys.modules['m']``, read by identity (a module
replaced there is another call), and ``from m import x`` reads ``x`` through it
as an attribute, like any other read from outside.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING

from fullgraph.runtime.monitor.module_paths import module_source
from fullgraph.runtime.monitor.opcodes import After, handles, tos
from fullgraph.runtime.sources import AttrSource

if TYPE_CHECKING:
    from fullgraph.runtime.monitor.run import MonitorRun
    from fullgraph.runtime.monitor.state import FrameState


@handles("IMPORT_NAME")
def import_name(run: MonitorRun, state: FrameState, ins) -> After:
    def after() -> None:
        module = tos(state)
        name = getattr(module, "__name__", None)
        if not isinstance(module, types.ModuleType) or not isinstance(name, str):
            return
        if sys.modules.get(name) is not module:
            return  # not registered under its name (a module object made by hand)
        module_source(run, name)

    return after


@handles("IMPORT_FROM")
def import_from(run: MonitorRun, state: FrameState, ins) -> After:
    source = run.source_of(tos(state))
    if source is None:
        return None
    attribute = AttrSource(source, ins.argval)

    def after() -> None:
        run.read(attribute, tos(state))

    return after
