"""The fullgraph language server: state shared by the features, and ``main()``.

The server itself is thin.  Each LSP feature is a plain function in
``fullgraph.lsp_server.features.<feature>`` registered on :data:`SERVER`;
the work behind it lives in pure helpers.  This module holds what the features
share: the merged settings, per-document analysis state, the runtime results
of the entrypoints, and lazy access to the two back ends:

- the refactors API (``fullgraph.refactors.lint_source`` / ``fix_source``),
  run in-process because it only parses source;
- the analysis service (``fullgraph.lsp_server.service.AnalysisService``),
  which runs user code in a worker subprocess.  User code never runs here.

Both back ends are imported lazily so the server starts, and keeps serving,
when one of them is missing or broken; the user is told once.

The protocol owns the process's real stdin and stdout.  :func:`main` moves
them to private descriptors and points file descriptors 0 and 1 at
``/dev/null`` and stderr, so a stray ``print`` (ours, a library's, or a
child process's that inherited fd 1) lands in the log instead of corrupting
the JSON-RPC stream.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import logging
import os
import sys
import threading
import traceback
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import unquote

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from fullgraph.lsp_server import settings as settings_module
from fullgraph.lsp_server.positions import PositionMapper

log = logging.getLogger("fullgraph.lsp_server")

SERVER_NAME = "fullgraph"


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("fullgraph")
    except Exception:  # an uninstalled checkout still serves
        return "0.0.0+unknown"


@dataclasses.dataclass
class Backend:
    """A lazily imported back end: the module, or why it is unavailable."""

    module: Any = None
    problem: str | None = None
    reported: bool = False


class FullgraphServer(LanguageServer):
    """pygls server plus the state that fullgraph's features share."""

    def __init__(self) -> None:
        super().__init__(
            name=SERVER_NAME,
            version=_version(),
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            # Jupyter notebooks in VS Code: the Python cells (features.notebook_cells).
            notebook_document_sync=types.NotebookDocumentSyncOptions(
                notebook_selector=[
                    types.NotebookDocumentFilterWithNotebook(
                        notebook="jupyter-notebook",
                        cells=[types.NotebookCellLanguage(language="python")],
                    )
                ],
                save=True,
            ),
        )
        self.settings = settings_module.Settings()
        self.client_settings: Any = None
        # Entrypoints added with fullgraph.addEntrypoint this session: they count
        # before the user saves the pyproject.toml edit.
        self.added_entrypoints: list[str] = []
        self.root: Path = Path.cwd()
        self._workspace_calls: Any = None  # WorkspaceCalls of self.root, made on first use
        # uri -> diagnostics state of an open document (features.diagnostics.DocumentState)
        self.documents: dict[str, Any] = {}
        # notebook uri -> features.notebook_cells.NotebookState (its cells are in `documents`)
        self.notebooks: dict[str, Any] = {}
        # entry -> features.runtime.EntryResult of its last analysis
        self.entry_results: dict[str, Any] = {}
        self.debounce_handles: dict[str, asyncio.TimerHandle] = {}
        self.lints_in_flight: dict[str, asyncio.Future] = {}
        self.lint_failures_reported: set[str] = set()
        self.loop: asyncio.AbstractEventLoop | None = None  # set at initialize
        self.analysis_lock = asyncio.Lock()
        self._service: Any = None
        self._service_key: Any = None
        self._service_lock = threading.Lock()
        self._backends: dict[str, Backend] = {}

    # -- client capabilities ------------------------------------------------
    @property
    def position_encoding(self) -> str:
        try:
            return str(
                getattr(self.workspace.position_encoding, "value", self.workspace.position_encoding)
            )
        except RuntimeError:  # before initialize
            return "utf-16"

    def mapper(self, text: str) -> PositionMapper:
        """The position helper for ``text`` in the negotiated encoding."""
        return PositionMapper(text, self.position_encoding)

    def capability(self, *path: str) -> Any:
        """A client capability by attribute path ("window", "work_done_progress"), or None."""
        node: Any = self.client_capabilities
        for name in path:
            node = getattr(node, name, None)
            if node is None:
                return None
        return node

    @property
    def supports_pull_diagnostics(self) -> bool:
        return self.capability("text_document", "diagnostic") is not None

    @property
    def supports_diagnostic_refresh(self) -> bool:
        return bool(self.capability("workspace", "diagnostics", "refresh_support"))

    @property
    def supports_work_done_progress(self) -> bool:
        return bool(self.capability("window", "work_done_progress"))

    @property
    def supports_document_changes(self) -> bool:
        return bool(self.capability("workspace", "workspace_edit", "document_changes"))

    @property
    def supports_create_file(self) -> bool:
        # Resource operations travel only inside documentChanges, so a client that
        # declares "create" accepts them even if it omits documentChanges (Neovim).
        operations = self.capability("workspace", "workspace_edit", "resource_operations") or []
        return any(getattr(op, "value", op) == "create" for op in operations)

    @property
    def supports_apply_edit(self) -> bool:
        return bool(self.capability("workspace", "apply_edit"))

    # -- documents ----------------------------------------------------------
    def open_document(self, uri: str) -> Any:
        """The open text document of ``uri`` (a file or a notebook cell), or None.

        pygls keys its documents by the unquoted URI; clients send them quoted
        (VS Code's cell URIs end in ``%3D%3D``, paths with spaces have ``%20``).
        """
        return self.workspace.text_documents.get(unquote(uri))

    def document_text(self, uri: str) -> str | None:
        """The editor's text of ``uri`` when open, else the file on disk, else None."""
        document = self.open_document(uri)
        if document is not None:
            return document.source
        path = to_fs_path(uri)
        try:
            return Path(path).read_text(encoding="utf-8") if path else None
        except (OSError, UnicodeDecodeError):
            return None

    def document_version(self, uri: str) -> int | None:
        document = self.open_document(uri)
        return document.version if document is not None else None

    # -- messages -----------------------------------------------------------
    def show(self, message: str, kind: types.MessageType = types.MessageType.Warning) -> None:
        """Tell the user (window/showMessage) and keep a copy in the log.

        Safe from worker threads: the message is handed to the event loop, so
        two writers never interleave bytes on the protocol stream.
        """
        log.warning("%s", message)
        params = types.ShowMessageParams(type=kind, message=message)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            if self.loop is not None:
                self.loop.call_soon_threadsafe(self.window_show_message, params)
            return
        self.window_show_message(params)

    # -- settings -----------------------------------------------------------
    def reload_settings(self, client_settings: Any = None, *, from_client: bool = False) -> None:
        """Merge defaults, [tool.fullgraph] and the client's settings; report bad values."""
        if from_client:
            self.client_settings = client_settings
        settings, problems = settings_module.resolve(self.root, self.client_settings)
        missing = [entry for entry in self.added_entrypoints if entry not in settings.entrypoints]
        self.settings = dataclasses.replace(settings, entrypoints=settings.entrypoints + missing)
        for problem in problems:
            self.show(problem.message)

    # -- back ends ----------------------------------------------------------
    def _backend(self, module_name: str, required: tuple[str, ...], what: str) -> Any:
        backend = self._backends.setdefault(module_name, Backend())
        if backend.module is None and backend.problem is None:
            try:
                module = importlib.import_module(module_name)
                missing = [name for name in required if not hasattr(module, name)]
                if missing:
                    backend.problem = f"{module_name} has no {', '.join(missing)} yet"
                else:
                    backend.module = module
            except Exception as error:  # a broken back end must not take the server down
                backend.problem = f"cannot import {module_name}: {error!r}"
                log.error("%s", traceback.format_exc())
        if backend.module is None and not backend.reported:
            backend.reported = True
            self.show(f"fullgraph: {what} unavailable ({backend.problem})")
        return backend.module

    def refactors(self) -> Any:
        """The refactors API module, or None when it is unavailable (told once)."""
        return self._backend(
            "fullgraph.refactors",
            ("lint_source", "fix_source", "SourceSyntaxError"),
            "static rules",
        )

    def workspace_calls(self) -> Any:
        """The cached scan of which functions compiled code in other files calls."""
        from fullgraph.lsp_server.workspace_calls import WorkspaceCalls

        if self._workspace_calls is None or self._workspace_calls.root != self.root:
            self._workspace_calls = WorkspaceCalls(self.root)
        return self._workspace_calls

    def service(self) -> Any:
        """An AnalysisService for the current settings, or None (told once).

        Recreated when the root or the settings the worker starts with change.
        """
        module = self._backend(
            "fullgraph.lsp_server.service", ("AnalysisService",), "runtime analysis"
        )
        if module is None:
            return None
        # Entrypoints and the timeout travel with each call; only what the worker
        # is started with forces a new one (and a new, slow torch import).
        key = (self.root, self.settings.memory_mb, self.settings.backend, self.settings.python)
        with self._service_lock:
            if self._service is not None and self._service_key == key:
                return self._service
            self.close_service()
            # The settings are the service's configuration: one model for both.
            self._service = module.AnalysisService(self.root, self.settings)
            self._service_key = key
            return self._service

    def close_service(self) -> None:
        if self._service is not None:
            try:
                self._service.close()
            except Exception:
                log.error("closing the analysis service failed:\n%s", traceback.format_exc())
            self._service = None


SERVER = FullgraphServer()


def _claim_stdio() -> tuple[BinaryIO, BinaryIO]:
    """Take the real stdin/stdout for the protocol; leave harmless stand-ins behind.

    After this, file descriptor 1 is a copy of stderr and descriptor 0 reads
    /dev/null, for this process and every child it starts.
    """
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    protocol_in = os.fdopen(os.dup(sys.stdin.fileno()), "rb")
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), 1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdout = sys.stderr
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - lives as long as the process
    return protocol_in, protocol_out


def main(argv: list[str] | None = None) -> int:
    """Serve LSP over stdio (``python -m fullgraph.lsp_server``, ``fullgraph lsp``)."""
    import argparse

    parser = argparse.ArgumentParser(prog="fullgraph lsp", description=__doc__.splitlines()[0])
    parser.add_argument("--log-level", default=os.environ.get("FULLGRAPH_LSP_LOG", "WARNING"))
    # `fullgraph lsp` may hand over its own leftover arguments; ignore what isn't ours.
    options, _ = parser.parse_known_args(argv or [])
    logging.basicConfig(
        stream=sys.stderr,
        level=options.log_level.upper(),
        format="fullgraph-lsp %(levelname)s %(name)s: %(message)s",
    )
    protocol_in, protocol_out = _claim_stdio()
    import fullgraph.lsp_server.features  # noqa: F401 - registers every feature on SERVER

    SERVER.start_io(protocol_in, protocol_out)
    SERVER.close_service()
    return 0
