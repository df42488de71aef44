"""Output of the current thread dropped for a while; other threads' goes through.

A path the data does not take is run speculatively (``branch_exploration.py``):
what it prints or warns from code the monitor does not stop (a library's warning,
a print in torch's Python) must not be shown, since the program did not take
it.  ``sys.stdout``, ``sys.stderr`` and ``warnings.showwarning`` are process-wide,
so another thread of the program (a heartbeat, a data-loading thread that logs)
writing meanwhile must still be heard: only this thread's output is dropped.
"""

from __future__ import annotations

import collections
import contextlib
import sys
import threading
import warnings
from collections.abc import Iterator
from typing import Any

# The latest filters, held past their blocks (see ``muted``).
_RETIRED: collections.deque = collections.deque(maxlen=64)


class _ThreadFilter:
    """A stream that drops what one thread writes and passes the rest on."""

    def __init__(self, stream: Any, muted: int):
        self._stream = stream
        self._muted = muted

    def write(self, text: str) -> int:
        if threading.get_ident() == self._muted:
            return len(text)
        return self._stream.write(text)

    def flush(self) -> None:
        if threading.get_ident() != self._muted:
            self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def muted() -> Iterator[None]:
    """Drop what the current thread prints or warns inside the block."""
    me = threading.get_ident()
    streams = {name: getattr(sys, name) for name in ("stdout", "stderr")}
    show = warnings.showwarning

    def show_others(message, category, filename, lineno, file=None, line=None):
        if threading.get_ident() != me:
            show(message, category, filename, lineno, file, line)

    for name, stream in streams.items():
        filtered = _ThreadFilter(stream, me)
        # Kept alive after the block: print() and warnings' show_warning hold
        # sys.stdout / sys.stderr as borrowed references (CPython gh-130163, fixed in
        # later 3.12 / 3.13 releases), so another thread inside a print when the block
        # ends would write through a freed object (a segfault) if the filter died.
        _RETIRED.append(filtered)
        setattr(sys, name, filtered)
    try:
        # catch_warnings: the registries of "once" / "default" warnings forget what
        # the block showed (dropped), as after any change of the filters.
        with warnings.catch_warnings():
            warnings.showwarning = show_others
            yield
    finally:
        for name, stream in streams.items():
            if isinstance(getattr(sys, name), _ThreadFilter):  # unless replaced since
                setattr(sys, name, stream)
