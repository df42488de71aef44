"""``LOAD_GLOBAL``: a name the function finds in its module's globals or in builtins.

A module global is read at its path in the module's globals dict (a global the
call itself wrote is followed as the value it wrote).  A builtin (``len``,
``print``, ``range``) is found in the module's globals first and in
``builtins`` after: a global of that name defined later (``len = my_len``) or a
patched ``builtins.print`` (a logger that redirects prints) changes what the
call does.  So a builtin the function loads is read twice: absent from its
module's globals, and the object ``builtins`` holds now.
"""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any

from fullgraph.runtime import cpython
from fullgraph.runtime.monitor.opcodes import After, handles, tos
from fullgraph.runtime.sources import ConstSource, ContainsSource, ItemSource

if TYPE_CHECKING:
    from fullgraph.runtime.monitor.run import MonitorRun
    from fullgraph.runtime.monitor.state import FrameState


@handles("LOAD_GLOBAL")
def load_global(run: MonitorRun, state: FrameState, ins) -> After:
    name = ins.argval
    globals_dict = state.frame.f_globals

    def after() -> None:
        value = tos(state, cpython.loaded_depth(ins, lambda depth: tos(state, depth)))
        if (id(globals_dict), name) in run.written:
            run.loaded_written((id(globals_dict), name), value)
        elif name in globals_dict:
            source = ItemSource(ConstSource(run.globals_name(globals_dict)), name)
            run.read(source, value)
        else:
            read_builtin(run, globals_dict, name, value)

    def on_exception(error: BaseException) -> None:
        # ``try: s = SCALE except NameError: s = 1.0``: the name is in neither namespace,
        # and the guard says so (defined later, the call takes the other path).
        if isinstance(error, NameError) and (id(globals_dict), name) not in run.written:
            run.read(ContainsSource(ConstSource(run.globals_name(globals_dict)), name), False)
            namespace = _builtins_of(globals_dict)
            run.read(ContainsSource(ConstSource(run.globals_name(namespace)), name), False)

    after.on_exception = on_exception
    return after


def _builtins_of(globals_dict: dict) -> dict:
    namespace = globals_dict.get("__builtins__", builtins)
    return vars(namespace) if not isinstance(namespace, dict) else namespace


def read_builtin(run: MonitorRun, globals_dict: dict, name: str, value: Any) -> None:
    namespace = _builtins_of(globals_dict)
    if namespace.get(name, _MISSING) is not value:
        return  # not what LOAD_GLOBAL found there (no guard can say where it came from)
    module_globals = ConstSource(run.globals_name(globals_dict))
    run.read(ContainsSource(module_globals, name), False, symbolic=False)
    run.read(ItemSource(ConstSource(run.globals_name(namespace)), name), value, symbolic=False)


_MISSING = object()
