"""``logger.info(...)`` replayed as if made at the user's line.

``logging`` finds the caller of a log call by walking the stack; in a replay
that caller is the mock, so a formatter with ``%(filename)s:%(lineno)d
%(funcName)s`` printed ``<fullgraph mock 0>:8 mock`` (F64 did the same for
``warnings.warn``).  A log call of the function is recorded as a call of
:func:`log_at` with the location the record was made at, which builds the
``LogRecord`` the same way ``Logger._log`` does, minus the stack walk.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "warn": logging.WARNING,
    "error": logging.ERROR,
    "exception": logging.ERROR,
    "critical": logging.CRITICAL,
    "fatal": logging.FATAL,
    "log": None,  # the level is the call's first argument
}
_MODULE_FUNCTIONS = {name: getattr(logging, name) for name in _LEVELS}


def located(fn: Any, args: tuple, kwargs: dict, frame: Any) -> tuple | None:
    """``(log_at, args, kwargs, moved)`` for a log call made in ``frame``, or None
    (not a log call, or one whose ``stacklevel`` points at another caller).
    ``moved``: where each argument of the original call went (positions over
    ``args`` then ``kwargs``)."""
    if frame is None or "stacklevel" in kwargs:
        return None
    name = getattr(fn, "__name__", "")
    if name not in _LEVELS:
        return None
    receiver, rest, offset = None, args, 0
    if getattr(fn, "__self__", None) is not None and isinstance(fn.__self__, logging.Logger):
        receiver = fn.__self__
        if getattr(type(receiver), name, None) is not getattr(logging.Logger, name, None):
            return None  # a logger class that overrides the method: replayed as it is
    elif args and isinstance(args[0], logging.Logger) and fn is getattr(logging.Logger, name):
        receiver, rest, offset = args[0], args[1:], 1
    elif _MODULE_FUNCTIONS.get(name) is not fn:
        return None
    where = (frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name, name)
    new_args = (receiver, *where, *rest)
    moved = {i: i - offset + 1 + len(where) for i in range(offset, len(args))}
    if offset:
        moved[0] = 0
    moved.update({len(args) + j: len(new_args) + j for j in range(len(kwargs))})
    return log_at, new_args, dict(kwargs), moved


def log_at(
    logger: logging.Logger | None,
    pathname: str,
    lineno: int,
    func: str,
    method: str,
    *args: Any,
    **kwargs: Any,
) -> None:
    """``logger.<method>(*args, **kwargs)`` as if called at ``pathname:lineno`` in ``func``."""
    if logger is None:  # ``logging.info(...)``: the root logger, configured on first use
        logger = logging.root
        if not logger.handlers:
            logging.basicConfig()
    level = _LEVELS[method]
    if level is None:
        level, *args = args
    if not logger.isEnabledFor(level):
        return
    msg, *fmt = args
    exc_info = kwargs.get("exc_info", method == "exception")
    if exc_info:
        if isinstance(exc_info, BaseException):
            exc_info = (type(exc_info), exc_info, exc_info.__traceback__)
        elif not isinstance(exc_info, tuple):
            exc_info = sys.exc_info()
    record = logger.makeRecord(
        logger.name, level, pathname, lineno, msg, tuple(fmt), exc_info or None, func,
        kwargs.get("extra"), None,
    )  # fmt: skip
    logger.handle(record)
