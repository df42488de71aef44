"""Objects with a Python ``__index__`` handed to torch: ``x[I]``, ``x[I:]``, ``y[I] = v``.

torch asks such an object for its int in C, where the monitor does not see
the ``__index__`` method run, and the graph would hold the object itself
(which generated code cannot name).  Each one becomes the int it gives now,
read at its path as ``type(I).__index__(I)``, so the guard asks it again on
every call.  An object the call made has no path: its ``__index__`` may read
anything, so the record is refused.
"""

from __future__ import annotations

import operator
import types
from typing import Any

from fullgraph.runtime.sources import IndexSource


def plain_indices(run: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """``args`` and ``kwargs`` with every object with a Python ``__index__`` (also
    inside tuples, lists and slices) replaced by its int, each read at its path."""
    if not any(_holds_index_object(value) for value in (*args, *kwargs.values())):
        return args, kwargs
    args = tuple(_plain(run, value) for value in args)
    return args, {key: _plain(run, value) for key, value in kwargs.items()}


def _is_index_object(value: Any) -> bool:
    method = getattr(type(value), "__index__", None)
    return isinstance(method, types.FunctionType) and not isinstance(value, int)


def _holds_index_object(value: Any) -> bool:
    if type(value) in (tuple, list):
        return any(_holds_index_object(item) for item in value)
    if type(value) is slice:
        return any(_is_index_object(end) for end in (value.start, value.stop, value.step))
    return _is_index_object(value)


def _plain(run: Any, value: Any) -> Any:
    if type(value) in (tuple, list):
        return type(value)(_plain(run, item) for item in value)
    if type(value) is slice:
        return slice(*(_plain(run, end) for end in (value.start, value.stop, value.step)))
    if not _is_index_object(value):
        return value
    index = operator.index(value)
    source = run.source_of(value)
    if source is None:
        run.refuse(f"a {type(value).__name__} the call made indexes a tensor through __index__")
    else:
        run.read(IndexSource(source), index, symbolic=False)
    return index
