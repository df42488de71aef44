"""Context variables: ``contextvars.ContextVar`` holds what the running context set.

``cv.get()`` returns a value no argument carries: a caller may ``cv.set(v)``
between two calls.  The rest of ``contextvars`` is pure, but a ``get`` of a
variable the function did not set itself is replayed on every call, its result
checked where it is used.  A ``get`` after the function's own ``set`` reads what
the run put there (transformers sets its output collector, reads it in hooks and
resets it, all inside one forward), so it stays part of the record.  A ``set``
that the function does not ``reset`` before returning would leave the variable
changed for the caller, which a replay would not do: the record is refused.
"""

from __future__ import annotations

import contextvars
from typing import Any

from fullgraph.runtime.monitor import annotation_table


def annotation_for(run: Any, fn: Any, args: tuple, annotation: Any) -> Any:
    """The annotation a call of ``fn`` gets, counting the run's own sets and resets."""
    variable, name = _variable_call(fn, args)
    if variable is None:
        return annotation
    counts = run.context_vars_set
    if name == "get":
        return (
            annotation if counts.get(id(variable), 0) > 0 else annotation_table.READS_HIDDEN_STATE
        )
    if name in ("set", "reset"):
        run.keepalive.append(variable)
        counts[id(variable)] = counts.get(id(variable), 0) + (1 if name == "set" else -1)
    return annotation


def refuse_left_set(run: Any) -> None:
    """At the end of the run: a variable set and not reset stays changed for the caller."""
    if any(count > 0 for count in run.context_vars_set.values()):
        run.refuse(
            "sets a context variable and returns without resetting it: a replay would not set it"
        )


def _variable_call(fn: Any, args: tuple) -> tuple[Any, str]:
    """``cv.get`` bound, or ``ContextVar.get`` with the variable first (after LOAD_METHOD)."""
    name = getattr(fn, "__name__", "")
    receiver = getattr(fn, "__self__", None)
    if isinstance(receiver, contextvars.ContextVar):
        return receiver, name
    if getattr(fn, "__objclass__", None) is contextvars.ContextVar and args:
        return args[0], name
    return None, name
