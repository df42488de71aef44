"""Runtime breaks by source location, and the caller chain that reached each.

A break site is one (code, file, line, column): the same ``.item()`` reached
from three entrypoints is one problem in one place, so ``fullgraph check``
prints it once and the editor shows one diagnostic for it, listing the
entrypoints.  :func:`by_site` is that grouping, shared by both.

Stack frames in a report name the function as the interpreter knows it
(``forward``); :func:`qualified_name` finds the class it belongs to from the
source (``Block.forward``), so a caller chain reads ``Model.forward →
Block.forward``.  Nothing is imported or run: the file is parsed with
:mod:`ast`.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Hashable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from fullgraph.lsp_server.locations import Definition, definitions

Item = TypeVar("Item")
ARROW = " → "


def break_key(brk: dict[str, Any]) -> tuple[Any, ...]:
    """The site of a report's break (or data check, or deferred effect)."""
    return (brk["code"], str(Path(brk["file"]).resolve()), brk["line"], brk["column"])


def by_site(
    found: Iterable[tuple[str, Item]], key: Callable[[Item], Hashable]
) -> list[tuple[Item, list[str]]]:
    """``(entry, item)`` pairs grouped by ``key``: the first item of each site, with
    every entrypoint that reached it, in the order they came."""
    sites: dict[Hashable, tuple[Item, list[str]]] = {}
    for entry, item in found:
        site = sites.setdefault(key(item), (item, []))
        if entry not in site[1]:
            site[1].append(entry)
    return list(sites.values())


@functools.lru_cache(maxsize=256)
def _definitions(path: str, mtime_ns: int) -> tuple[Definition, ...]:
    try:
        source = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ()
    return tuple(d for d in definitions(source) if d.kind == "function")


def qualified_name(file: str | Path, line: int, function: str) -> str:
    """``Block.forward`` for the frame of ``forward`` at ``line`` of ``file``.

    The innermost function named ``function`` whose body holds ``line``; the
    bare name when the file cannot be read or holds no such function.
    """
    try:
        mtime = os.stat(file).st_mtime_ns
    except OSError:
        return function
    best: Definition | None = None
    for definition in _definitions(str(file), mtime):
        name = definition.qualname.rsplit(".", 1)[-1]
        inside = name == function and definition.line <= line <= definition.last_line
        if inside and (best is None or definition.line >= best.line):
            best = definition
    return best.qualname if best is not None else function


def frame_names(stack: Iterable[dict[str, Any]]) -> list[str]:
    """The qualified name of each frame of a report's stack, outermost first."""
    return [
        qualified_name(
            frame.get("file", ""), int(frame.get("line") or 0), str(frame.get("function", "?"))
        )
        for frame in stack
    ]


def caller_chain(names: Iterable[str]) -> str:
    """``Model.forward → Block.forward``."""
    return ARROW.join(names)
