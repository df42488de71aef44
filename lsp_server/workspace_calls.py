"""Which functions compiled code in another file calls, over a project folder, cached.

A function that a compiled function of another file calls runs in that graph
too, so its prints break it (``refactors.workspace_entrypoints`` finds them
with ``ast``).  Scanning the folder costs one parse per file; the result is
kept until a ``.py`` file under the folder changes on disk (its size or
modification time), so ``fullgraph check`` scans once and the editor, which
asks on every lint, rescans after a save.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from fullgraph.lsp_server.sources import iter_python_files


class WorkspaceCalls:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._cached: tuple[list, dict] | None = None

    def of(self, files: Iterable[Path], finder: Callable) -> dict[Path, dict[str, str]]:
        """``finder`` (``workspace_entrypoints``) over the root's files and ``files``."""
        everything = sorted(
            {
                path.resolve()
                for path in (*iter_python_files([self.root], (".py",)), *files)
                if path.suffix == ".py"
            }
        )
        signature = []
        for path in everything:
            try:
                stat = path.stat()
            except OSError:
                continue
            signature.append((path, stat.st_mtime_ns, stat.st_size))
        if self._cached is None or self._cached[0] != signature:
            self._cached = (signature, finder(everything, self.root))
        return self._cached[1]
