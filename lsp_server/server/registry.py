"""How a feature module declares its LSP handlers without importing the server.

A handler is a plain function marked with :func:`feature` (an LSP method) or
:func:`command` (a ``workspace/executeCommand`` name).  Marking records what to
register on the function itself; :func:`register`, called once by
:mod:`.main`, hands every marked function of the given modules to the pygls
server.  So the features never import the module that builds the server, and
the server module never imports a feature: registration happens in one place.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any, TypeVar

from pygls.lsp.server import LanguageServer

Handler = TypeVar("Handler", bound=Callable[..., Any])

_MARK = "__fullgraph_lsp__"


@dataclasses.dataclass(frozen=True)
class Registration:
    kind: str  # "feature" | "command"
    name: str  # the LSP method or the command name
    options: Any = None  # the feature's registration options


def feature(method: str, options: Any = None) -> Callable[[Handler], Handler]:
    """Mark a function as the handler of LSP ``method`` (as ``LanguageServer.feature``)."""

    def mark(function: Handler) -> Handler:
        setattr(function, _MARK, Registration("feature", method, options))
        return function

    return mark


def command(name: str) -> Callable[[Handler], Handler]:
    """Mark a function as the handler of the command ``name`` (as ``LanguageServer.command``)."""

    def mark(function: Handler) -> Handler:
        setattr(function, _MARK, Registration("command", name))
        return function

    return mark


def register(server: LanguageServer, modules: Iterable[ModuleType]) -> None:
    """Register every function the ``modules`` define and marked on ``server``."""
    for module in modules:
        for function in list(vars(module).values()):
            registration = getattr(function, _MARK, None)
            if not isinstance(registration, Registration):
                continue
            if getattr(function, "__module__", None) != module.__name__:
                continue  # imported from another feature module: registered there
            if registration.kind == "feature":
                server.feature(registration.name, registration.options)(function)
            else:
                server.command(registration.name)(function)
