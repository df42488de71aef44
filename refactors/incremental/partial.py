"""Partial modules: a chunk and the chunks it needs, linted as a module of their own.

A partial module is the chunks one chunk depends on
(:meth:`~fullgraph.refactors.incremental.chunking.DependencyIndex.needed`) in
file order, behind a two-line ``if 1:`` header that makes libcst pick the
file's own indentation and newline (new code in a fix is written with them).
:class:`PartialContext` is the rule context over one: it keeps each fix's
rewrite rather than building it, since a fix is rebuilt from the whole file
(:mod:`fullgraph.refactors.incremental.fixes`).
"""

from __future__ import annotations

import dataclasses
import io
import re
import tokenize
from collections.abc import Collection, Sequence

import libcst as cst
import libcst.metadata as meta

from ..context import RuleContext
from ..engine import run_rules
from ..findings import Fix, TextEdit
from .chunking import Chunk

_FIRST_NEWLINE = re.compile(r"\r\n|\r|\n")


class FallBack(Exception):
    """The partial-module route cannot give the exact result; use the whole file."""


@dataclasses.dataclass(frozen=True)
class Layout:
    """How libcst should lay out new code: the whole file's newline and first indentation."""

    newline: str
    indent: str

    @property
    def header(self) -> str:
        # libcst takes the module's newline from its first line break and its
        # indentation from its first indented block: this header supplies both.
        return f"if 1:{self.newline}{self.indent}pass{self.newline}"


def layout_of(source: str) -> Layout:
    match = _FIRST_NEWLINE.search(source)
    newline = match.group() if match else "\n"
    indent = "    "
    try:
        # Universal newlines: a file may break lines with a lone "\r".
        for token in tokenize.generate_tokens(io.StringIO(source, newline=None).readline):
            if token.type == tokenize.INDENT:
                indent = token.string
                break
    except (tokenize.TokenError, SyntaxError):
        pass
    return Layout(newline, indent)


@dataclasses.dataclass
class Partial:
    """The text of a partial module and where each of its chunks lies in it."""

    text: str
    chunks: list[int]  # file chunk indices, in file order
    offsets: list[int]  # where each chunk's text starts in ``text``
    lines: list[int]  # the 1-based line each chunk starts on in ``text``


def build_partial(layout: Layout, chunks: Sequence[Chunk], included: Sequence[int]) -> Partial:
    parts = [layout.header]
    offset, line = len(layout.header), 3
    offsets, lines = [], []
    for index in included:
        chunk = chunks[index]
        offsets.append(offset)
        lines.append(line)
        parts.append(chunk.text)
        offset += len(chunk.text)
        line += chunk.line_count
    text = "".join(parts)
    if not text.endswith(("\n", "\r")):
        # Only the file's last chunk can lack a line break; statements need one.
        text += layout.newline
    return Partial(text, list(included), offsets, lines)


class PartialContext(RuleContext):
    """A rule context over a partial module that keeps each fix's rewrite instead of running it.

    ``module`` (the whole file, when given) is what the rules see as the module
    outside the nodes they visit: the names a rewrite must not reuse, the
    imports it refers to.
    """

    def __init__(
        self,
        partial: Partial,
        path: str,
        wrapper: meta.MetadataWrapper,
        entrypoints: Collection[str],
        module: cst.Module | None = None,
    ) -> None:
        super().__init__(partial.text, path, wrapper, entrypoints)
        if module is not None:
            self.module = module
        self.rewrites: dict[int, tuple[dict, list[str]]] = {}

    def _build_fix(self, changes, imports, title):
        fix = Fix(title, build=_not_built)
        self.rewrites[id(fix)] = (changes, list(imports))
        return fix


def _not_built() -> list[TextEdit]:
    raise AssertionError("a partial module's fix is rebuilt from the whole file")


def lint_partial(
    partial: Partial,
    layout: Layout,
    path: str,
    codes: Collection[str] | None,
    entrypoints: Collection[str],
    module: cst.Module | None = None,
) -> PartialContext:
    try:
        tree = cst.parse_module(partial.text)
    except cst.ParserSyntaxError as error:
        raise FallBack(f"a partial module does not parse ({error.message})") from None
    if (tree.default_newline, tree.default_indent) != (layout.newline, layout.indent):
        raise FallBack("the partial module's layout differs from the file's")
    wrapper = meta.MetadataWrapper(tree, unsafe_skip_copy=True)
    context = PartialContext(partial, path, wrapper, entrypoints, module)
    run_rules(context, codes)
    return context


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """One version of the document, everything a fix needs to be built later."""

    source: str
    chunks: tuple[Chunk, ...]
    layout: Layout
    path: str
    codes: frozenset[str] | None
    # Names, or name -> the reason it is compiled (what the rules were given).
    entrypoints: Collection[str]
