"""Finding a project's Python source files, for static checks and change detection.

Both the static checker and the worker's "restart when the code changed" rule
walk the project; they skip what is not the user's code: virtual environments
(any folder holding ``pyvenv.cfg``), hidden folders, caches, build output and
``node_modules``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

# What ``fullgraph check`` and ``fullgraph fix`` read: Python files and Jupyter notebooks.
SOURCE_SUFFIXES = (".py", ".ipynb")
SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", "build", "dist", "site-packages", "out"})


def _skip_dir(entry: os.DirEntry[str]) -> bool:
    name = entry.name
    if name.startswith(".") or name in SKIPPED_DIRS or name.endswith(".egg-info"):
        return True
    return os.path.exists(os.path.join(entry.path, "pyvenv.cfg"))


def _walk(directory: str, suffixes: tuple[str, ...] = (".py",)) -> Iterator[os.DirEntry[str]]:
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                if not _skip_dir(entry):
                    yield from _walk(entry.path, suffixes)
            elif entry.name.endswith(suffixes) and entry.is_file():
                yield entry
        except OSError:
            continue


def iter_python_files(
    paths: Iterable[Path], suffixes: tuple[str, ...] = (".py",)
) -> Iterator[Path]:
    """``.py`` files (or other ``suffixes``) named directly or found under the folders, each once."""
    seen: set[Path] = set()
    for path in paths:
        path = Path(path)
        found = [path] if path.is_file() else [Path(e.path) for e in _walk(str(path), suffixes)]
        for file in found:
            if file not in seen:
                seen.add(file)
                yield file


def snapshot_mtimes(root: Path) -> dict[str, tuple[int, int]]:
    """(mtime_ns, size) of every project ``.py`` file, to tell whether code changed."""
    snapshot: dict[str, tuple[int, int]] = {}
    for entry in _walk(str(root)):
        try:
            stat = entry.stat()
        except OSError:
            continue
        snapshot[entry.path] = (stat.st_mtime_ns, stat.st_size)
    return snapshot
