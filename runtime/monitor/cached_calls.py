"""Calls of ``functools.lru_cache`` / ``functools.cache`` wrappers of the program's functions.

The wrapper is C code.  On a miss it runs the program's function unobserved (a
builder that counts its builds, logs, fills a registry), on a hit it runs
nothing.  A record replays such a call as a callout and has the values the
program read after it: those hold only where the call does not run the
function again, that is where it hits.  The mock therefore makes the call
through :func:`from_cache`, which hands back a :class:`CacheMissed` when the
call missed; the mid-guard after the call then misses (the value's type check
fails), and the monitoring run that follows finds the value in the cache (or is
handed it, where effects came before: ``Injected`` unwraps it), so the
function's effects happen once, and what the program reads of them is read
again.

A cached call that raised runs its function on every call (``lru_cache`` keeps
no exceptions): the record is refused.
"""

from __future__ import annotations

import functools
import types
from typing import Any

from fullgraph.runtime.monitor.user_code import steps_into


class CacheMissed:
    """What :func:`from_cache` gives for a call that missed: the value it computed."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value

    def __repr__(self) -> str:
        return f"CacheMissed({self.value!r})"


def from_cache(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` of a cached function, or :class:`CacheMissed` when the
    call ran the function (the replay's mid-guard then misses)."""
    misses = fn.cache_info().misses
    value = fn(*args, **kwargs)
    return value if fn.cache_info().misses == misses else CacheMissed(value)


def is_cached_program_function(fn: Any) -> bool:
    """An ``lru_cache`` wrapper (or a method bound to one) of a function the monitor
    would step into, were it not behind the cache."""
    wrapper = fn.__func__ if isinstance(fn, types.MethodType) else fn
    if not isinstance(wrapper, functools._lru_cache_wrapper):
        return False
    wrapped = getattr(wrapper, "__wrapped__", None)
    return wrapped is not None and steps_into(wrapped)


def through_cache(fn: Any, args: tuple, kwargs: dict) -> tuple:
    """The replayed call ``fn(*args, **kwargs)`` as a call of :func:`from_cache`, and
    where each argument went (its symbol follows it).  A method bound to an instance
    (``self.table(n)``) is the wrapper called with the instance first: the bound
    method object is this run's, the wrapper and the instance have paths."""
    head: tuple = (fn,)
    if isinstance(fn, types.MethodType):
        head = (fn.__func__, fn.__self__)
    moved = {position: position + len(head) for position in range(len(args) + len(kwargs))}
    return from_cache, (*head, *args), kwargs, moved
