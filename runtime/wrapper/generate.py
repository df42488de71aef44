"""The generated compiled wrapper: an entrypoint's records as a standalone module.

``generate_wrapper_source`` runs the target under the monitor with grad
enabled, under ``torch.no_grad()`` and under ``torch.inference_mode()`` (a
record's guard checks the grad mode, so each mode needs its own record) and
writes the records it got as readable Python: each graph as an ``nn.Module``
class (the fx code), each record's guard, mock and ``bind`` function, and a
loader.  ``OUT.compile(target)`` runs them over the user's own object
(``wrapper_support.CompiledTarget``); ``OUT.compiled(*args)`` over the one the
entrypoint builds.

Objects the guard compares by identity are written in one of two ways.  A
function, class or module that has an importable name is imported by it (the
check then means "the same function", as it did in the recording process).
Any other object of the program (a submodule, a config, a logger) is read by
``bind`` from the user's target and arguments through the path the monitored
run read it by, and must be of the type it had there.

Before the source is returned it is executed once here and every graph class
is rebuilt into an fx graph that must equal the recorded graph node for node
(``wrapper_graphs``); a module that would compile something else is refused.

This module walks the records and decides the module-level names; the text
itself is in ``wrapper/template.py`` and the expressions that re-create an
object in a fresh process in ``wrapper/naming.py``.
"""

from __future__ import annotations

import contextlib
import itertools
import keyword
import linecache
import re
import types
from collections.abc import Callable
from typing import Any

import torch

from fullgraph.runtime.compiled import CompiledFunction
from fullgraph.runtime.monitor.user_code import is_user_code
from fullgraph.runtime.record.mock_support import HELPERS
from fullgraph.runtime.record.records import Record
from fullgraph.runtime.wrapper.graphs import graph_difference, graph_from_class
from fullgraph.runtime.wrapper.naming import (
    FX_GLOBALS,
    OWN_NAMES,
    OWN_PATTERN,
    definition,
    importable,
    is_own_name,
)
from fullgraph.runtime.wrapper.template import (
    TEMPLATE,
    describe,
    graph_class,
    record_section,
    record_spec,
)

# The grad modes a record is made under, in this order; the label is the record's mode.
MODES: tuple[tuple[str, Callable[[], Any]], ...] = (
    ("grad enabled", torch.enable_grad),
    ("torch.no_grad()", torch.no_grad),
    ("torch.inference_mode()", torch.inference_mode),
)
_CALLS_PER_MODE = 3  # until a call replays: a second record may lift a number that changed
_check_ids = itertools.count()


def user_method(value: Any) -> bool:
    """A method of a class of the user's code (not torch's, numpy's or fullgraph's)."""
    code = getattr(value, "__code__", None)
    return (
        isinstance(value, types.FunctionType)
        and "." in value.__qualname__
        and code is not None
        and is_user_code(code)
    )


class WrapperError(RuntimeError):
    """The record holds something a standalone module cannot re-create."""


def generate_wrapper_source(
    fn: Callable, args: tuple, kwargs: dict, entrypoint: str | None = None
) -> str:
    _Module(fn, [], entrypoint).build_expression()  # no target to build: say so before running
    records = _records_per_mode(fn, args, kwargs)
    source = _Module(fn, records, entrypoint).render()
    _check_module(source, records)
    return source


def _records_per_mode(fn: Callable, args: tuple, kwargs: dict) -> list[tuple[str, Record]]:
    """The records of ``fn`` on its sample inputs, called in each of ``MODES``, with
    the mode each was made under; most recently used first, as the runtime keeps them."""
    runtime = CompiledFunction(fn, backend="eager", eager_check=False)
    mode_of: dict[int, str] = {}
    for position, (label, mode) in enumerate(MODES):
        for _ in range(_CALLS_PER_MODE):
            hits = runtime.stats.hits
            try:
                with mode():
                    runtime(*args, **kwargs)
            except Exception:
                if position == 0:
                    raise  # the program's own error on its sample inputs
                break  # the program does not run this way (backward() under no_grad)
            for record in runtime.records:
                mode_of.setdefault(id(record), label)
            if runtime.stats.hits > hits or runtime.stats.fallback_reason is not None:
                break
        if runtime.stats.fallback_reason is not None:
            break
    if not runtime.records:
        reason = runtime.stats.fallback_reason or runtime.stats.unrecorded_reason
        raise WrapperError(f"no reusable record: {reason}")
    return [(mode_of[id(record)], record) for record in runtime.records]


class _Module:
    """The names, classes and records of one generated module, and its text."""

    def __init__(self, fn: Callable, records: list[tuple[str, Record]], entrypoint: str | None):
        self.fn = fn
        self.records = records
        self.entrypoint = entrypoint
        self.values: dict[str, Any] = {}  # module-level name -> object
        self.exprs: dict[str, str] = {}  # module-level name -> expression that makes it
        self.placeholders: list[str] = []  # names only bind_<k> or a record's namespace fill
        self.taken = set(OWN_NAMES)
        for _, record in records:
            self.taken |= set(record.guard_namespace) | set(record.mock_namespace)
        self.renamed: dict[tuple[str, int], str] = {}  # (name, id) -> the name it gets here
        self.classes: dict[str, str] = {}  # class text (name left out) -> class name
        self.class_text: list[str] = []

    # -- module-level names -------------------------------------------------

    def _define(self, name: str, value: Any, expr: str) -> bool:
        """Define ``name`` at module level; False when it names another object there."""
        if name in self.values:
            existing = self.values[name]
            return existing is value or (isinstance(value, torch.device) and existing == value)
        self.values[name], self.exprs[name] = value, expr
        return True

    def _name_for(self, value: Any, hint: str) -> str:
        """A module-level name for an importable ``value`` (a class a bound object must have)."""
        for name, existing in self.values.items():
            if existing is value:
                return name
        expr = importable(value)
        if expr is None:
            raise WrapperError(f"cannot name {value!r} in a new process")
        name = self._fresh(re.sub(r"\W+", "_", hint).strip("_") or "obj")
        self._define(name, value, expr)
        return name

    def _fresh(self, base: str) -> str:
        name, n = base, 1
        while name in self.taken or OWN_PATTERN.fullmatch(name) or keyword.iskeyword(name):
            n += 1
            name = f"{base}_{n}"
        self.taken.add(name)
        return name

    # -- per record ---------------------------------------------------------

    def _record_names(self, record: Record) -> tuple[list[str], dict, dict]:
        """Record's constants: the ``"name": expression`` entries of its bind function;
        per side (guard, mock), names that side sees as another object than the
        module-level one (the guard's ``time`` may be the module, the mock's the
        function); and per side, constants renamed because the module needs the name."""
        provenance = record.provenance
        paths_by_id = {  # a mock's callout (random.random) the guard read by a path
            id(namespace[name]): path
            for namespace in (record.guard_namespace, record.mock_namespace)
            for name, path in provenance.items()
            if name in namespace
        }
        graph_names = _graph_names(record)
        entries: dict[str, tuple[Any, str]] = {}  # name -> (object, expression)
        sides: dict[str, dict[str, str]] = {"guard": {}, "mock": {}}
        renames: dict[str, dict[str, str]] = {"guard": {}, "mock": {}}
        for side, namespace in (("guard", record.guard_namespace), ("mock", record.mock_namespace)):
            for name, value in namespace.items():
                if name in ("torch", "builtins") or name in HELPERS or name in graph_names:
                    continue
                if is_own_name(name, value):
                    original = name
                    key = (original, id(value))  # one new name per object, for every record
                    if key not in self.renamed:
                        self.renamed[key] = self._fresh(f"k_{original}")
                    name = renames[side][original] = self.renamed[key]
                    provenance = {**provenance, name: provenance.get(original)}
                expr = importable(value)
                if expr is not None and provenance.get(name) and user_method(value):
                    # ``type(M).forward`` of the user's model: re-read from the compiled
                    # object, whose class may come from a module imported another way
                    # (a script run as __main__, a program loaded from its file).
                    expr = None
                if expr is not None:
                    if not self._define(name, value, expr):  # another object by that name
                        sides[side][name] = expr
                    continue
                if name in entries:
                    if entries[name][0] is not value:
                        raise WrapperError(f"the guard and the mock name two objects {name}")
                    continue
                path = provenance.get(name) or paths_by_id.get(id(value))
                if path is None:
                    raise WrapperError(
                        f"cannot re-create the constant {name} ({type(value).__name__}) "
                        "in a new process"
                    )
                entries[name] = (value, self._checked(value, path))
        for name in sorted(entries):
            if name not in self.values and name not in self.placeholders:
                self.placeholders.append(name)
        for name, (_, expr) in entries.items():  # a path reads A, K, M, F and module names
            used = set(re.findall(r"(?<![\w.'])[A-Za-z_]\w*", re.sub(r"'[^']*'", "", expr)))
            if used & set(entries):
                raise WrapperError(f"a bound object's path reads another bound object: {expr}")
        entry_text = [f"{name!r}: {expr}" for name, (_, expr) in entries.items()]
        return entry_text, sides, renames

    def _checked(self, value: Any, path: str) -> str:
        """``path`` read with the check that it holds the kind of object the run saw."""
        where = definition(value)
        if where is not None:
            return f"_support.same_definition({path}, {where!r})"
        cls = type(value)
        kind = self._name_for(cls, cls.__name__) if importable(cls) else repr(definition(cls))
        return f"_support.of_type({path}, {kind})"

    def _graph_classes(self, record: Record) -> tuple[dict[str, str], dict[str, str]]:
        """Record's graph and check names -> class names (classes the same text share one)."""
        graphs, checks = {}, {}
        for index, gm in enumerate(record.graphs):
            if f"graph{index}(" in record.mock_source:
                graphs[f"graph{index}"] = self._class_for(gm, "Graph")
        for name, gm in record.check_graphs.items():
            checks[name] = self._class_for(gm, "Check")
        return graphs, checks

    def _class_for(self, gm: torch.fx.GraphModule, prefix: str) -> str:
        text = graph_class("{CLASS}", gm)
        key = prefix + text
        if key not in self.classes:
            number = sum(1 for name in self.classes.values() if name.startswith(prefix))
            name = f"{prefix}{number}"
            self.classes[key] = name
            self.class_text.append(text.replace("{CLASS}", name))
            for module in gm.modules():  # subgraphs too
                code = module.graph.python_code(root_module="self")
                for global_name, value in code.globals.items():
                    self._graph_global(global_name, value, text)
        return self.classes[key]

    def _graph_global(self, name: str, value: Any, text: str) -> None:
        if name == "torch" or not re.search(rf"(?<![\w.]){re.escape(name)}\b", text):
            return
        if is_own_name(name, value):  # fx names globals after torch's qualnames
            raise WrapperError(f"a graph's global {name!r} takes a name the module needs")
        expr = FX_GLOBALS.get(name) or importable(value)
        if expr is None:
            raise WrapperError(f"cannot re-create the graph's global {name} in a new process")
        if not self._define(name, value, expr) and name not in FX_GLOBALS:
            raise WrapperError(f"two graphs name different objects {name}")

    # -- the text -----------------------------------------------------------

    def render(self) -> str:
        sections, specs = [], []
        classes = [self._graph_classes(record) for _, record in self.records]  # names first
        for index, (mode, record) in enumerate(self.records):
            entries, sides, renames = self._record_names(record)
            sections.append(record_section(index, mode, record, entries, renames))
            specs.append(record_spec(index, mode, record, *classes[index], sides))
        for name in sorted({n for _, r in self.records for n in _graph_names(r)}):
            if name not in self.placeholders:
                self.placeholders.append(name)
        kind, kind_name = self._target_kind()
        build = self.build_expression()
        entry_import = ""
        if self.entrypoint:
            module = self.entrypoint.partition(":")[0]
            entry_import = (
                "# The entrypoint's module first: importing it may set up what the others need.\n"
                f"importlib.import_module({module!r})\n"
            )
        definitions = "\n".join(f"{name} = {self.exprs[name]}" for name in self.values)
        placeholders = "\n".join(f"{name} = None" for name in self.placeholders)
        modes = "; ".join(f"record {i}: {mode}" for i, (mode, _) in enumerate(self.records))
        return TEMPLATE.format(
            what=describe(self.fn),
            modes=modes,
            entrypoint=repr(self.entrypoint),
            entry_import=entry_import,
            definitions=definitions,
            placeholders=placeholders,
            classes="\n\n".join(self.class_text),
            records="\n\n".join(sections),
            specs="".join(specs),
            kind=kind,
            kind_name=repr(kind_name),
            build=build,
        )

    def _target_kind(self) -> tuple[str, str]:
        """The expression the target is checked against, and the target's name."""
        fn = self.fn
        if isinstance(fn, torch.nn.Module):
            cls = type(fn)
            name = f"{cls.__module__}.{cls.__qualname__}"
            expr = importable(cls)
            return (expr if expr else repr(definition(cls))), name
        name = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"
        if isinstance(fn, types.FunctionType):
            return (importable(fn) or repr(definition(fn))), name
        expr = importable(type(fn))
        return (expr if expr else repr(definition(type(fn)))), name

    def build_expression(self) -> str:
        if self.entrypoint:
            module, _, name = self.entrypoint.partition(":")
            return f"_support.resolve({module!r}, {name!r})()[0]"
        expr = importable(self.fn) if isinstance(self.fn, types.FunctionType) else None
        if expr is None:
            raise WrapperError(
                "a compiled wrapper needs an importable target: pass the entrypoint "
                "('package.module:function') that builds this model"
            )
        return expr


def _graph_names(record: Record) -> set[str]:
    names = {f"graph{i}" for i in range(len(record.graphs)) if f"graph{i}(" in record.mock_source}
    return names | set(record.check_graphs)


def _check_module(source: str, records: list[tuple[str, Record]]) -> None:
    """Execute the module here and rebuild its graph classes: each must give the
    recorded graph node for node, or the module is not written."""
    filename = f"<fullgraph wrapper check {next(_check_ids)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict[str, Any] = {"__name__": "fullgraph_wrapper_check"}
    try:
        exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - our own module
        for index, (_, record) in enumerate(records):
            spec = namespace["RECORDS"][index]
            for name, cls in {**spec.graphs, **spec.checks}.items():
                recorded = (
                    record.check_graphs[name]
                    if name in record.check_graphs
                    else record.graphs[int(name.removeprefix("graph"))]
                )
                _compare(recorded, graph_from_class(cls), f"record {index} {name}")
    except WrapperError:
        raise
    except Exception as error:
        raise WrapperError(f"the generated module does not load here: {error!r}") from error
    finally:
        with contextlib.suppress(KeyError):
            del linecache.cache[filename]


def _compare(recorded: torch.fx.GraphModule, rebuilt: torch.fx.GraphModule, where: str) -> None:
    difference = graph_difference(recorded.graph, rebuilt.graph)
    if difference is not None:
        raise WrapperError(f"{where}: its class does not rebuild the recorded graph: {difference}")
    for name, child in recorded.named_children():
        _compare(child, rebuilt.get_submodule(name), f"{where}.{name}")
