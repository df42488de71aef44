"""What a generated compiled wrapper runs: its records over the user's own objects.

A generated module (``runtime/wrapper/generate.py`` writes it) holds, per record, a
guard, a mock and a ``bind`` function as readable Python, and a ``Record`` that
ties them to the record's graph classes.  ``CompiledTarget`` is the callable
the module's ``compile(target)`` returns:

- Each record's guard and mock run as copies whose globals are the module's
  plus the objects ``bind`` reads from this target (and, on the first call, from
  its arguments) through the paths the monitored run read them by.  Each bound
  object must be of the type it had there, so an identity check in the guard
  means "the object this callable was bound to", as it does in the process
  that recorded it.
- Graphs are rebuilt from their classes (``wrapper_graphs``, no tracing) and
  compiled on their first call, once per record and backend for the module.
- A call tries the records like the in-process runtime does
  (``CompiledFunction.__call__``): the first whose guard passes is replayed.
  When none passes the original runs.  A replay that made calls with effects
  (a print) and then missed a mid-guard, or whose replayed call raised, is
  finished by one monitored run that is handed those calls' results, so no
  effect happens twice and an error is raised at the user's own line.
"""

from __future__ import annotations

import dataclasses
import importlib
import types
from collections.abc import Callable
from typing import Any

import torch

from fullgraph.runtime.backends import eager_backend, inductor_backend, inductor_dynamic_backend
from fullgraph.runtime.record.mock_support import EffectRaised, Missed, restore_rng, rng_state
from fullgraph.runtime.torch_internals import control_flow_errors
from fullgraph.runtime.wrapper.graphs import graph_from_class

_CONTROL_FLOW_ERRORS = control_flow_errors()


def resolve(module: str, qualname: str) -> Any:
    """The object named ``qualname`` in ``module`` (``resolve("torch", "Tensor.add")``)."""
    value: Any = importlib.import_module(module)
    for part in qualname.split("."):
        value = getattr(value, part)
    return value


class Unbound(Exception):
    """An object of the program is not of the kind the record was made with."""


def of_type(value: Any, kind: type | str) -> Any:
    """``value`` when its type is ``kind`` (a class, or ``"module:qualname"`` of a
    class that has no importable name); raises :class:`Unbound` otherwise."""
    cls = type(value)
    if cls is kind or (isinstance(kind, str) and f"{cls.__module__}:{cls.__qualname__}" == kind):
        return value
    raise Unbound(f"{cls.__module__}.{cls.__qualname__} is not {kind}")


def same_definition(value: Any, where: str) -> Any:
    """``value`` when it is the function defined at ``"module:qualname:line"`` or the
    class ``"module:qualname"`` (one without an importable name: a closure, a lambda,
    a class made inside a function); raises :class:`Unbound` otherwise."""
    found = f"{getattr(value, '__module__', None)}:{getattr(value, '__qualname__', None)}"
    if isinstance(value, types.FunctionType):
        found += f":{value.__code__.co_firstlineno}"
    elif not isinstance(value, type):
        found = ""
    if found == where:
        return value
    raise Unbound(f"{value!r:.80} is not the definition at {where}")


@dataclasses.dataclass
class Record:
    """One record of a generated module (the fields mirror ``fullgraph.runtime.record.records.Record``)."""

    guard: types.FunctionType
    mock: types.FunctionType
    bind: types.FunctionType  # (A, K, M, F) -> {constant name: object of the program}
    graphs: dict[str, type]  # the mock's graph names -> graph classes
    checks: dict[str, type] = dataclasses.field(default_factory=dict)  # data checks, run eagerly
    mode: str = ""  # what the monitored run ran under
    dynamic: bool = False  # compiled for sizes that vary
    draws_random: bool = False
    rerun_safe: bool = True
    resume_on_miss: bool = False
    callouts: tuple = ()  # (function name, line) of each call the mock replays
    # Names the guard (the mock) sees as other objects than the module's of that name.
    guard_names: dict = dataclasses.field(default_factory=dict)
    mock_names: dict = dataclasses.field(default_factory=dict)
    compiled: dict = dataclasses.field(default_factory=dict, repr=False)  # (graph, backend) -> fn

    def shares_callouts(self, other: Record, count: int) -> bool:
        return self.callouts[:count] == other.callouts[:count]


def _backend(name: str | Callable, dynamic: bool) -> Callable:
    if callable(name):
        return name
    if name == "inductor":
        return inductor_dynamic_backend if dynamic else inductor_backend
    if name == "eager":
        return eager_backend
    raise ValueError(f"unknown backend {name!r}: expected 'inductor', 'eager' or a callable")


class _FirstCall:
    """Stands for one graph of a record until its first call compiles it."""

    def __init__(self, record: Record, name: str, backend, namespace: dict):
        self.record, self.name, self.backend, self.namespace = record, name, backend, namespace

    def __call__(self, *args):
        key = (self.name, self.backend)
        compiled = self.record.compiled.get(key)
        if compiled is None:
            gm = graph_from_class(self.record.graphs[self.name])
            compiled = _backend(self.backend, self.record.dynamic)(gm, list(args))
            self.record.compiled[key] = compiled
        self.namespace[self.name] = compiled  # later calls go straight to it
        return compiled(*args)


class _Bound:
    """A record's guard and mock for one callable: copies over its own namespaces."""

    def __init__(self, record: Record, module_globals: dict, backend):
        self.record = record
        self.guard_namespace = {**module_globals, **record.guard_names}
        self.mock_namespace = dict(module_globals)
        for name in record.graphs:
            self.mock_namespace[name] = _FirstCall(record, name, backend, self.mock_namespace)
        for name, check in record.checks.items():
            self.mock_namespace[name] = check()  # a few ops: run eagerly
        self.mock_namespace.update(record.mock_names)
        self.guard = _rebound(record.guard, self.guard_namespace)
        self.mock = _rebound(record.mock, self.mock_namespace)
        self.ready = False

    def bind(self, args: tuple, kwargs: dict, module, fn) -> bool:
        """Read the record's objects of the program; False while they aren't there."""
        if not self.ready:
            try:
                objects = self.record.bind(args, kwargs, module, fn)
            except (AttributeError, IndexError, KeyError, TypeError, Unbound):
                return False
            for namespace, own in (
                (self.guard_namespace, self.record.guard_names),
                (self.mock_namespace, self.record.mock_names),
            ):
                namespace.update({k: v for k, v in objects.items() if k not in own})
            self.ready = True
        return True


def _rebound(function: types.FunctionType, namespace: dict) -> types.FunctionType:
    return types.FunctionType(
        function.__code__, namespace, function.__name__, function.__defaults__
    )


class CompiledTarget:
    """A generated module's records over one target: what ``OUT.compile(target)`` returns."""

    def __init__(
        self,
        target: Callable,
        records: tuple[Record, ...],
        module_globals: dict,
        stats: dict | None = None,
        backend: str | Callable = "inductor",
    ):
        _backend(backend, False)  # an unknown name fails here, not on the first call
        self.target = target
        self.module = target if isinstance(target, torch.nn.Module) else None
        self.fn = type(target).forward if self.module is not None else target
        self.backend = backend
        self.records = [_Bound(record, module_globals, backend) for record in records]
        self.stats = {"replays": 0, "fallbacks": 0}
        self._module_stats = stats

    def __repr__(self) -> str:
        return f"<compiled {self.target!r}: {len(self.records)} records, {self.stats}>"

    def __call__(self, *args, **kwargs):
        made: dict = {}  # results of calls a replay made before it missed
        made_by = None
        for position, bound in enumerate(self.records):
            record = bound.record
            if made and not record.shares_callouts(made_by, max(made) + 1):
                continue  # its replay would repeat those effects
            if not bound.bind(args, kwargs, self.module, self.fn):
                continue
            made_now: dict = {}
            rng = rng_state() if record.draws_random else None
            try:
                inputs = bound.guard(args, kwargs, self.module, self.fn)
                if inputs is None:
                    continue
                result = bound.mock(inputs, args, kwargs, self.module, self.fn, made, made_now)
            except Exception as error:
                if isinstance(error, EffectRaised):
                    raise error.error from None  # made as eager made it: not run again
                if not record.rerun_safe or isinstance(error, _CONTROL_FLOW_ERRORS):
                    raise  # (checkpoint's recompute stopping early: the program's own)
                if rng is not None:  # the rerun draws the graphs' random numbers again
                    restore_rng(rng)
                self._count("fallbacks")
                return self._rerun(args, kwargs, {**made, **made_now})
            if isinstance(result, Missed):
                if made_now and record.resume_on_miss and not made:
                    made, made_by = dict(made_now), record
                continue
            self._count("replays")
            if position:  # most recently used first
                self.records.insert(0, self.records.pop(position))
            return result
        self._count("fallbacks")
        if made:
            return self._rerun(args, kwargs, made)
        return self.target(*args, **kwargs)

    def _count(self, what: str) -> None:
        self.stats[what] += 1
        if self._module_stats is not None:
            self._module_stats[what] = self._module_stats.get(what, 0) + 1

    def _rerun(self, args: tuple, kwargs: dict, made: dict):
        """The program once more under the monitor, handed the results of the calls the
        replay already made (their effects are done): what the in-process runtime does."""
        from fullgraph.runtime.compiled import CompiledFunction

        runtime = CompiledFunction(self.target, backend="eager", eager_check=False)
        return runtime._monitor(args, kwargs, injected=made)


def expect_target(target: Any, kind: Any, name: str) -> None:
    """Raise a TypeError unless ``target`` is what the module was generated for: an
    instance of a class, a function (itself, or ``"module:qualname:line"``)."""
    try:
        if isinstance(kind, str) and kind.count(":") == 2:
            same_definition(target, kind)
        elif isinstance(kind, (type, str)):
            of_type(target, kind)
        elif target is not kind:
            raise Unbound(name)
    except Unbound:
        raise TypeError(
            f"this module was generated for {name}; got {type(target).__qualname__} "
            f"{target!r:.80}: regenerate it with `fullgraph compile` for that target"
        ) from None
