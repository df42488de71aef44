"""The fullgraph language server: the pygls server and the state its features share.

The server itself is thin.  Each LSP feature is a plain function in
``fullgraph.lsp_server.server.features.<feature>``, registered on a
:class:`FullgraphServer` by :mod:`.main`; the work behind it lives in pure
helpers.  This module holds what the features share: the merged settings,
per-document analysis state (typed in :mod:`.state`), the runtime results of
the entrypoints, and the analysis service
(:class:`~fullgraph.lsp_server.analysis.service.AnalysisService`), which runs
user code in a worker subprocess.  User code never runs here; the static rules
(``fullgraph.refactors``) run in-process because they only parse source.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
import traceback
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

from fullgraph.lsp_server import settings as settings_module
from fullgraph.lsp_server.analysis.service import AnalysisService
from fullgraph.lsp_server.positions import PositionMapper
from fullgraph.lsp_server.server.state import (
    DocumentState,
    EntryResult,
    NotebookState,
    SaveAnalyses,
)
from fullgraph.lsp_server.workspace_calls import WorkspaceCalls

log = logging.getLogger("fullgraph.lsp_server")

SERVER_NAME = "fullgraph"


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("fullgraph")
    except Exception:  # an uninstalled checkout still serves
        return "0.0.0+unknown"


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
        # The client's own settings as it sent them (JSON), before merging.
        self.client_settings: Any = None
        # Entrypoints added with fullgraph.addEntrypoint this session: they count
        # before the user saves the pyproject.toml edit.
        self.added_entrypoints: list[str] = []
        self.root: Path = Path.cwd()
        self._workspace_calls: WorkspaceCalls | None = None  # of self.root, made on first use
        # uri -> static state of an open document (a file or a notebook cell)
        self.documents: dict[str, DocumentState] = {}
        # notebook uri -> its state (its cells are in `documents`)
        self.notebooks: dict[str, NotebookState] = {}
        # entry -> its last analysis
        self.entry_results: dict[str, EntryResult] = {}
        self.debounce_handles: dict[str, asyncio.TimerHandle] = {}
        self.lints_in_flight: dict[str, asyncio.Future] = {}
        self.lint_failures_reported: set[str] = set()
        self.save_analyses = SaveAnalyses()
        self.loop: asyncio.AbstractEventLoop | None = None  # set at initialize
        self.analysis_lock = asyncio.Lock()
        self._service: AnalysisService | None = None
        self._service_key: tuple | None = None
        self._service_lock = threading.Lock()

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
    def open_document(self, uri: str) -> TextDocument | None:
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
    def workspace_calls(self) -> WorkspaceCalls:
        """The cached scan of which functions compiled code in other files calls."""
        if self._workspace_calls is None or self._workspace_calls.root != self.root:
            self._workspace_calls = WorkspaceCalls(self.root)
        return self._workspace_calls

    def service(self) -> AnalysisService:
        """An AnalysisService for the current settings.

        Recreated when the root or the settings the worker starts with change.
        """
        # Entrypoints and the timeout travel with each call; only what the worker
        # is started with forces a new one (and a new, slow torch import).
        key = (self.root, self.settings.memory_mb, self.settings.backend, self.settings.python)
        with self._service_lock:
            if self._service is not None and self._service_key == key:
                return self._service
            self.close_service()
            # The settings are the service's configuration: one model for both.
            self._service = AnalysisService(self.root, self.settings)
            self._service_key = key
            return self._service

    def close_service(self) -> None:
        if self._service is not None:
            try:
                self._service.close()
            except Exception:
                log.error("closing the analysis service failed:\n%s", traceback.format_exc())
            self._service = None


def path_of(uri: str) -> Path | None:
    """The resolved file system path of a ``file:`` URI, else None."""
    path = to_fs_path(uri)
    return Path(path).resolve() if path else None
