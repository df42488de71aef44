"""Calls of ``functools.lru_cache`` / ``functools.cache`` wrappers of the program's functions.

The wrapper is C code.  On a miss it runs the program's function unobserved (a
builder that counts its builds, logs, fills a registry), on a hit it runs
nothing.  A record replays such a call as a callout and has the values the
program read after it: those hold only where the call does not run the
function again, that is where it hits.  The mock therefore makes the call
through :func:`from_cache`, which looks the call's key up in the wrapper's
cache first and hands back a :class:`CacheMissed` without making the call when
it is not there; the mock's check after the call (``missed_cache``) then
misses, and the monitoring run that follows makes the call itself, in program
order: what the program read and printed before it does not see the build.

``lru_cache`` has no way to look a key up: :func:`_cache_of` finds the wrapper's
dict among the objects the garbage collector sees it hold (CPython 3.10-3.13
visit the cache dict just before the wrapped function), and :func:`_key` makes
the key as the wrapper does.  Where the layout is not recognised, the call is
made and its result handed over in the :class:`CacheMissed` (``Injected``
unwraps it for the monitoring run), so the function's effects still happen
once.

A cached call that raised runs its function on every call (``lru_cache`` keeps
no exceptions): the record is refused.
"""

from __future__ import annotations

import functools
import gc
import types
import weakref
from typing import Any

from fullgraph.runtime.monitor.user_code import steps_into

NOT_MADE = object()  # a CacheMissed's value when the call was not made


class CacheMissed:
    """What :func:`from_cache` gives for a call that would miss (``value`` is
    ``NOT_MADE``) or that missed (the value it computed)."""

    __slots__ = ("value",)

    def __init__(self, value: Any = NOT_MADE):
        self.value = value

    @property
    def made(self) -> bool:
        return self.value is not NOT_MADE

    def __repr__(self) -> str:
        return f"CacheMissed({self.value!r})" if self.made else "CacheMissed()"


def from_cache(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` of a cached function where the cache holds the call;
    otherwise a :class:`CacheMissed` (the mock's check after it then misses)."""
    held = _cache_of(fn)
    if held is not None:
        cache, keyword_mark = held
        key = _key(args, kwargs, keyword_mark, fn.cache_parameters()["typed"])
        if key not in cache:
            return CacheMissed()
    misses = fn.cache_info().misses
    value = fn(*args, **kwargs)
    return value if fn.cache_info().misses == misses else CacheMissed(value)


def missed_cache(value: Any) -> bool:
    """The mock's check after a cached call."""
    return type(value) is CacheMissed


def _cache_of(wrapper: Any) -> tuple[dict, object] | None:
    """The dict an ``lru_cache`` wrapper keeps its results in and the marker its keys
    put before keyword arguments, or None where they can't be told.  Found once per
    wrapper (``cache_clear()`` empties the same dict): the walk of the wrapper's
    referents visits every entry of a bounded cache, too slow for each replay."""
    try:
        return _FOUND[wrapper]
    except KeyError:
        found = _FOUND[wrapper] = _find_cache(wrapper)
        return found


_FOUND: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _find_cache(wrapper: Any) -> tuple[dict, object] | None:
    """CPython's wrapper visits the dict, the wrapped function and the marker in that
    order, and the dict holds as many entries as ``cache_info()`` counts."""
    if wrapper.cache_parameters()["maxsize"] == 0:
        return None  # nothing is kept: every call runs the function
    referents = gc.get_referents(wrapper)
    function = getattr(wrapper, "__wrapped__", None)
    found = [
        (held, mark)
        for held, after, mark in zip(referents, referents[1:], referents[2:])
        if type(held) is dict and after is function and type(mark) is object
    ]
    if len(found) != 1 or len(found[0][0]) != wrapper.cache_info().currsize:
        return None
    return found[0]


def _key(args: tuple, kwargs: dict, keyword_mark: object, typed: bool) -> Any:
    """The key CPython's ``lru_cache`` files a call under (``lru_cache_make_key``): a
    lone ``str`` or ``int`` argument itself; otherwise the arguments, the marker and
    the keyword arguments' names and values in order, then (``typed``) their types."""
    if not typed and not kwargs:
        if len(args) == 1 and type(args[0]) in (int, str):
            return args[0]
        return args
    key = [*args]
    if kwargs:
        key.append(keyword_mark)
        for item in kwargs.items():
            key.extend(item)
    if typed:
        key.extend(type(value) for value in (*args, *kwargs.values()))
    return tuple(key)


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
