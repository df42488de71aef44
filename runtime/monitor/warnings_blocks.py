"""Warnings the monitor replays: ``warnings.warn`` at the user's line, and
``with warnings.catch_warnings(): warnings.simplefilter(...)`` blocks, replayed whole.

A replayed ``warnings.warn`` is made with the location eager's would have (the
file, line and module of the frame ``stacklevel`` points at, which the run
saw) and that module's warning registry, so filters on the user's module and
"once per location" behave as in eager, not as for a warning from the mock.  A
``stacklevel`` that points past the function (``stacklevel=2`` of a deprecation
warning: the line that called the function) is found when the warning is made
(:func:`warn_beyond`), past fullgraph's own frames, on the monitored call too.

Inside such a block the program only changes the warning filters, which the
block's exit puts back (the same list object, and ``showwarning``); what is
left of it is what a warning issued inside sees, and the filters' version
counter, which tells the warning registries to forget which warnings they
already showed.  A replay makes the whole block again, on a new
``catch_warnings`` object and after the graph, with the same filter calls:
its effects on the process are then eager's.  The monitor finds such blocks
(``calls.py``); a block that does anything else, or that records warnings
(``record=True``), is not turned into one call.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

FILTER_FUNCTIONS = {
    "simplefilter": warnings.simplefilter,
    "filterwarnings": warnings.filterwarnings,
    "resetwarnings": warnings.resetwarnings,
}


def warn_at(
    module: str,
    filename: str,
    lineno: int,
    message: Any,
    category: type[Warning] | None = None,
) -> None:
    """``warnings.warn(message, category)`` as if made at ``filename:lineno`` in ``module``
    (its warning registry too, when the module is imported)."""
    if isinstance(message, Warning):
        category = type(message)
    module_globals = getattr(sys.modules.get(module), "__dict__", None)
    loader = module_globals and getattr(module_globals.get("__spec__"), "loader", None)
    registry = (
        module_globals.setdefault("__warningregistry__", {})
        if module_globals is not None
        else _REGISTRIES.setdefault((module, filename), {})
    )
    warnings.warn_explicit(
        message,
        category or UserWarning,
        filename,
        lineno,
        module=module,
        registry=registry,
        # (3.12+ refuses module globals without a loader: the source line is then
        # looked up by file name, as for any warning.)
        module_globals=module_globals if loader is not None else None,
    )


def warn_beyond(
    levels: int,
    message: Any,
    category: type[Warning] | None = None,
    stacklevel: int = 1,
    source: Any = None,
) -> None:
    """``warnings.warn(message, category)`` at the frame ``levels`` frames out of the
    compiled function: ``1`` is the line that called it.  ``stacklevel`` was the
    program's (``levels`` replaces it); ``source`` goes with the warning."""
    frame = sys._getframe(1)
    while frame is not None and not _fullgraph_frame(frame):
        frame = frame.f_back  # the program's own frames, on the monitored call
    while frame is not None and _fullgraph_frame(frame):
        frame = frame.f_back
    for _ in range(levels - 1):
        frame = frame.f_back if frame is not None else None
    if frame is None:  # as warnings.warn does past the outermost frame
        warnings.warn(message, category, stacklevel=1, source=source)
        return
    if isinstance(message, Warning):
        category = type(message)
    module_globals = frame.f_globals
    warnings.warn_explicit(
        message,
        category or UserWarning,
        frame.f_code.co_filename,
        frame.f_lineno,
        module=module_globals.get("__name__", "<string>"),
        registry=module_globals.setdefault("__warningregistry__", {}),
        module_globals=module_globals,
        source=source,
    )


def _fullgraph_frame(frame: Any) -> bool:
    """fullgraph's modules and the code it generates (mocks, guards, graphs)."""
    name = frame.f_globals.get("__name__")
    filename = frame.f_code.co_filename
    return (isinstance(name, str) and name.startswith("fullgraph.")) or filename.startswith(
        ("<fullgraph", "<eval_with_key")
    )


# Registries for warnings of code that is no imported module (exec'd source).
_REGISTRIES: dict[tuple, dict] = {}


def replay_warnings_block(options: tuple, calls: tuple) -> None:
    """Enter ``warnings.catch_warnings(**dict(options))``, make ``calls`` (each
    ``(filter function name, args, kwargs)``) and exit, as the program's block did."""
    with warnings.catch_warnings(**dict(options)):
        for name, args, kwargs in calls:
            FILTER_FUNCTIONS[name](*args, **kwargs)
