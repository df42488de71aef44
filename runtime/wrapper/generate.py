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
"""

from __future__ import annotations

import builtins
import contextlib
import importlib
import itertools
import keyword
import linecache
import re
import sys
import types
from collections.abc import Callable
from typing import Any

import torch

from fullgraph.runtime.compiled import CompiledFunction
from fullgraph.runtime.record.records import Record
from fullgraph.runtime.wrapper.graphs import graph_difference, graph_from_class
from fullgraph.runtime.wrapper.lint import tidy
from fullgraph.runtime.wrapper.support import resolve

# Names the mock uses that the module defines from fullgraph.runtime.record.mock.
_HELPERS = (
    "MISS",
    "Missed",
    "make_dataclass_instance",
    "make_plain_object",
    "leaves",
    "write_back",
    "rng_state",
    "restore_rng",
)
# Names the module defines for itself.  A constant of the program by one of these
# names (re.compile is "compile") is renamed in its guard and mock.
_OWN_NAMES = frozenset(
    [
        *_HELPERS,
        "importlib",
        "torch",
        "builtins",
        "RECORDS",
        "STATS",
        "BACKEND",
        "ENTRYPOINT",
        "compile",
        "compiled",
    ]
)
_OWN_PATTERN = re.compile(
    r"(guard|mock|bind)_\d+|(Graph|Check)\d+\w*|_(mock|support|TARGET_KIND|TARGET_NAME|COMPILED)"
)
_OWN_OBJECTS = {"importlib": importlib, "torch": torch, "builtins": builtins}
# fx's code names these globals itself; the module defines the ones a class uses.
_FX_GLOBALS = {
    "inf": 'float("inf")',
    "nan": 'float("nan")',
    "NoneType": "type(None)",
    "device": "torch.device",
}
# The grad modes a record is made under, in this order; the label is the record's mode.
MODES: tuple[tuple[str, Callable[[], Any]], ...] = (
    ("grad enabled", torch.enable_grad),
    ("torch.no_grad()", torch.no_grad),
    ("torch.inference_mode()", torch.inference_mode),
)
_CALLS_PER_MODE = 3  # until a call replays: a second record may lift a number that changed
_check_ids = itertools.count()


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


def _importable(value: Any) -> str | None:
    """An expression that gives ``value`` itself in a fresh process, or None."""
    if isinstance(value, types.ModuleType):
        if sys.modules.get(value.__name__) is value:
            return f"importlib.import_module({value.__name__!r})"
        return None
    if isinstance(value, torch.device):
        return f"torch.device({str(value)!r})"
    if type(value) is tuple:  # the hooks of a module, when each has a name
        items = [_importable(item) for item in value]
        if all(items):
            return "(" + "".join(f"{item}, " for item in items).rstrip(" ") + ")"
        return None
    if isinstance(value, dict) and "__name__" in value and value.get("__builtins__") is not None:
        return _globals_dict(value)
    owner = getattr(value, "__objclass__", None)
    if isinstance(owner, type) and isinstance(getattr(value, "__name__", None), str):
        module, names = owner.__module__, [f"{owner.__qualname__}.{value.__name__}"]
    else:
        module = getattr(value, "__module__", None)
        bound_to = getattr(value, "__self__", None)
        if module is None and isinstance(bound_to, types.ModuleType):
            module = bound_to.__name__  # print, math.sqrt
        # torch's builtins say "_VariableFunctionsClass.relu" but are torch.relu;
        # boolean_dispatch's "fn" is torch.functional.unique
        names = [getattr(value, "__qualname__", None), getattr(value, "__name__", None)]
    if not isinstance(module, str):
        return None
    for name in dict.fromkeys(names):
        if not isinstance(name, str) or "<" in name:
            continue
        try:
            found = resolve(module, name)
        except Exception:  # noqa: BLE001, S112 - not reachable by that name
            continue
        if found is value:
            return f"_support.resolve({module!r}, {name!r})"
    return None


def _globals_dict(value: dict) -> str | None:
    """``vars(<module>)`` for a module's globals (``_collections_abc`` calls itself
    ``collections.abc``, so the module is looked for by its dict)."""
    key = value["__name__"]
    if getattr(sys.modules.get(key), "__dict__", None) is not value:
        found = (k for k, m in list(sys.modules.items()) if getattr(m, "__dict__", None) is value)
        key = next(found, None)
    if key is None:
        return None
    return f"vars(importlib.import_module({key!r}))"


def _definition(value: Any) -> str | None:
    """``"module:qualname[:line]"`` of a function or class without an importable name."""
    if isinstance(value, types.FunctionType):
        return f"{value.__module__}:{value.__qualname__}:{value.__code__.co_firstlineno}"
    if isinstance(value, type):
        return f"{value.__module__}:{value.__qualname__}"
    return None


class _Module:
    """The names, classes and records of one generated module, and its text."""

    def __init__(self, fn: Callable, records: list[tuple[str, Record]], entrypoint: str | None):
        self.fn = fn
        self.records = records
        self.entrypoint = entrypoint
        self.values: dict[str, Any] = {}  # module-level name -> object
        self.exprs: dict[str, str] = {}  # module-level name -> expression that makes it
        self.placeholders: list[str] = []  # names only bind_<k> or a record's namespace fill
        self.taken = set(_OWN_NAMES)
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
        expr = _importable(value)
        if expr is None:
            raise WrapperError(f"cannot name {value!r} in a new process")
        name = self._fresh(re.sub(r"\W+", "_", hint).strip("_") or "obj")
        self._define(name, value, expr)
        return name

    def _fresh(self, base: str) -> str:
        name, n = base, 1
        while name in self.taken or _OWN_PATTERN.fullmatch(name) or keyword.iskeyword(name):
            n += 1
            name = f"{base}_{n}"
        self.taken.add(name)
        return name

    def _own_name(self, name: str, value: Any) -> bool:
        """Whether ``name`` is one the module needs for something other than ``value``."""
        if name in _OWN_OBJECTS:
            return _OWN_OBJECTS[name] is not value
        return name in _OWN_NAMES or bool(_OWN_PATTERN.fullmatch(name))

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
                if name in ("torch", "builtins") or name in _HELPERS or name in graph_names:
                    continue
                if self._own_name(name, value):
                    original = name
                    key = (original, id(value))  # one new name per object, for every record
                    if key not in self.renamed:
                        self.renamed[key] = self._fresh(f"k_{original}")
                    name = renames[side][original] = self.renamed[key]
                    provenance = {**provenance, name: provenance.get(original)}
                expr = _importable(value)
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
        where = _definition(value)
        if where is not None:
            return f"_support.same_definition({path}, {where!r})"
        cls = type(value)
        kind = self._name_for(cls, cls.__name__) if _importable(cls) else repr(_definition(cls))
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
        text = _graph_class("{CLASS}", gm)
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
        if self._own_name(name, value):  # fx names globals after torch's qualnames
            raise WrapperError(f"a graph's global {name!r} takes a name the module needs")
        expr = _FX_GLOBALS.get(name) or _importable(value)
        if expr is None:
            raise WrapperError(f"cannot re-create the graph's global {name} in a new process")
        if not self._define(name, value, expr) and name not in _FX_GLOBALS:
            raise WrapperError(f"two graphs name different objects {name}")

    # -- the text -----------------------------------------------------------

    def render(self) -> str:
        sections, specs = [], []
        classes = [self._graph_classes(record) for _, record in self.records]  # names first
        for index, (mode, record) in enumerate(self.records):
            entries, sides, renames = self._record_names(record)
            sections.append(_record_section(index, mode, record, entries, renames))
            specs.append(_record_spec(index, mode, record, *classes[index], sides))
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
        return _TEMPLATE.format(
            what=_describe(self.fn),
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
            expr = _importable(cls)
            return (expr if expr else repr(_definition(cls))), name
        name = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"
        if isinstance(fn, types.FunctionType):
            return (_importable(fn) or repr(_definition(fn))), name
        expr = _importable(type(fn))
        return (expr if expr else repr(_definition(type(fn)))), name

    def build_expression(self) -> str:
        if self.entrypoint:
            module, _, name = self.entrypoint.partition(":")
            return f"_support.resolve({module!r}, {name!r})()[0]"
        expr = _importable(self.fn) if isinstance(self.fn, types.FunctionType) else None
        if expr is None:
            raise WrapperError(
                "a compiled wrapper needs an importable target: pass the entrypoint "
                "('package.module:function') that builds this model"
            )
        return expr


def _graph_names(record: Record) -> set[str]:
    names = {f"graph{i}" for i in range(len(record.graphs)) if f"graph{i}(" in record.mock_source}
    return names | set(record.check_graphs)


def _describe(fn: Callable) -> str:
    if isinstance(fn, torch.nn.Module):
        return type(fn).__qualname__
    return getattr(fn, "__qualname__", type(fn).__name__)


def _record_section(
    index: int, mode: str, record: Record, entries: list[str], renames: dict
) -> str:
    guard = record.guard_source.replace("def guard(", f"def guard_{index}(", 1)
    guard = tidy(guard, renames["guard"])
    mock = tidy(record.mock_source.replace("def mock(", f"def mock_{index}(", 1), renames["mock"])
    if entries:
        body = "    return {\n" + "".join(f"        {entry},\n" for entry in entries) + "    }\n"
    else:
        body = "    return {}\n"
    bind = (
        f"def bind_{index}(A, K, M, F):\n"
        f'    """Record {index}\'s objects of the program, read from this callable\'s target\n'
        f"    and first call through the paths the monitored run read them by; each must be\n"
        f'    of the type it had there."""\n' + body
    )
    rule = f"# -- record {index}: made with {mode} "
    return f"{rule}{'-' * max(4, 79 - len(rule))}\n\n\n{guard}\n\n{mock}\n\n{bind}"


def _record_spec(
    index: int,
    mode: str,
    record: Record,
    graphs: dict[str, str],
    checks: dict[str, str],
    sides: dict[str, dict[str, str]],
) -> str:
    def mapping(names: dict[str, str]) -> str:
        return "{" + ", ".join(f"{k!r}: {v}" for k, v in names.items()) + "}"

    own_names = "".join(
        f"        {side}_names={mapping(names)},\n" for side, names in sides.items() if names
    )
    return (
        f"    _support.Record(\n"
        f"        guard_{index},\n"
        f"        mock_{index},\n"
        f"        bind_{index},\n"
        f"        graphs={mapping(graphs)},\n"
        f"        checks={mapping(checks)},\n"
        f"        mode={mode!r},\n"
        f"        dynamic={record.dynamic_shapes},\n"
        f"        draws_random={record.draws_random},\n"
        f"        rerun_safe={record.rerun_safe},\n"
        f"        resume_on_miss={record.resume_on_miss},\n"
        f"        callouts={tuple(record.callout_names)!r},\n"
        f"{own_names}"
        f"    ),\n"
    )


def _graph_class(class_name: str, gm: torch.fx.GraphModule) -> str:
    """The class source of a graph (and of the subgraphs it calls, such as the
    branches of a torch.cond, as classes named after it)."""
    parts, children = [], []
    for child_name, child in gm.named_children():
        child_class = f"{class_name}_{child_name}"
        parts.append(_graph_class(child_class, child))
        children.append(f"        self.{child_name} = {child_class}()")
    return "\n\n".join([*parts, _graph_forward(class_name, gm, children)])


def _graph_forward(class_name: str, gm: torch.fx.GraphModule, children: list[str]) -> str:
    code = gm.graph.python_code(root_module="self")
    # A node nothing reads (the indices of a max) is a local nothing reads: named
    # "_name", as a linter expects of such a local.
    unread = {
        n.name for n in gm.graph.nodes if not n.users and n.op not in ("placeholder", "output")
    }
    lines = []
    for line in code.src.strip("\n").splitlines():
        # fx frees intermediates with "x = None" statements joined by ";  "
        statements = [s for s in line.split(";  ") if not re.fullmatch(r"\s*[\w\s=]+= None\s*", s)]
        if statements:
            assigned = re.match(r"(\s*)(\w+)( = .*)", statements[0])
            if assigned and assigned.group(2) in unread:
                statements[0] = f"{assigned.group(1)}_{assigned.group(2)}{assigned.group(3)}"
            indent = re.match(r"\s*", line).group(0)
            lines.extend(indent + s.strip() if i else s for i, s in enumerate(statements))
    body = "\n".join("    " + line if line.strip() else "" for line in lines)
    init = ""
    if children:
        init = (
            "    def __init__(self):\n        super().__init__()\n" + "\n".join(children) + "\n\n"
        )
    return f"class {class_name}(torch.nn.Module):\n{init}{body}\n"


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


_TEMPLATE = '''"""Compiled wrapper generated by fullgraph for {what}.

    import this_module as out
    y = out.compiled(*args)          # the target the entrypoint builds
    fast = out.compile(my_model)     # your own object of the same kind
    y = fast(*args)
    out.STATS                        # replays and fallbacks of every callable

Each call runs the first record whose guard passes: its compiled graph(s) and
its mock (the replayed effects and the result); the original runs when none
passes.  {modes}.
Regenerate with `fullgraph compile` after editing the model's code; don't edit.
"""

import importlib

import torch

# fullgraph's helpers, imported by name so the module sorts the same whichever
# package ruff or isort takes fullgraph to be.
_mock = importlib.import_module("fullgraph.runtime.record.mock")
_support = importlib.import_module("fullgraph.runtime.wrapper.support")
MISS, Missed, leaves, write_back = _mock.MISS, _mock.Missed, _mock.leaves, _mock.write_back
make_dataclass_instance, make_plain_object = _mock.make_dataclass_instance, _mock.make_plain_object
rng_state, restore_rng = _mock.rng_state, _mock.restore_rng

__all__ = ["STATS", "compile", "compiled"]

ENTRYPOINT = {entrypoint}
BACKEND = "inductor"  # compiled()'s backend ("inductor" or "eager"), read on its first call
STATS = {{"replays": 0, "fallbacks": 0}}  # calls of every callable of this module

{entry_import}{definitions}

# Each callable's own copies of the guards and mocks see these names bound to its
# objects (bind_<k>) and to the record's compiled graphs.
{placeholders}


{classes}


{records}


RECORDS = (
{specs})

_TARGET_KIND = {kind}
_TARGET_NAME = {kind_name}
_COMPILED = None


def compile(target=None, *, backend="inductor"):
    """Run ``target`` (default: the one the entrypoint builds) through these records:
    guard -> compiled graphs -> mock, the original whenever no record applies."""
    if target is None:
        target = {build}
    _support.expect_target(target, _TARGET_KIND, _TARGET_NAME)
    return _support.CompiledTarget(target, RECORDS, globals(), STATS, backend)


def compiled(*args, **kwargs):
    """The entrypoint's target, compiled with BACKEND on the first call."""
    global _COMPILED
    if _COMPILED is None:
        _COMPILED = compile(backend=BACKEND)
    return _COMPILED(*args, **kwargs)
'''
