"""Differential soundness harness: an eager twin and a compiled twin, side by side.

A :class:`Case` is a program factory plus a script.  The factory builds fresh
state every time it is called (a module, the globals its functions read,
containers, optimizers) and returns an :class:`Env` whose ``target`` is the
function or module to compile.  The script is a list of steps:

- :class:`Call`: call the target with arguments (built from the twin's own
  env, after seeding torch / random / numpy identically), optionally inside
  a context manager (``torch.autocast``, ``torch.no_grad``...);
- :class:`Do`: change something between calls (an argument's source, a
  global, an attribute, a container item, a hook, grad mode, autocast,
  ``torch.use_deterministic_algorithms``, the RNG seed...).

``run_case(case, backend)`` builds two independent instances of the program,
compiles one with ``fullgraph.runtime.compile(target, backend=backend)``, runs
the same script on both and, after every call, compares:

- the return value (Python types exactly, ``torch.Size``, namedtuples,
  dataclasses; tensors by dtype, shape, device, ``requires_grad``,
  leafness and values, exactly on the eager backend), and which returned
  objects are the arguments / the program's own objects (identity), or views
  of them (storage);
- the exception type and message when eager raises;
- captured stdout;
- the RNG state of torch, ``random`` and numpy;
- torch's global state after the call (grad mode, autocast, default dtype,
  deterministic algorithms, "is compiling");
- a snapshot of the watched state (``Case.watch``; by default the
  parameters, buffers, ``.grad`` and ``training`` flags of every module in
  the env, and the plain-data globals of programs loaded with
  :func:`load_program`).

Programs that read globals need per-twin globals: :func:`load_program` runs
a program's source in a fresh module namespace, so each twin has its own.

Global torch state is kept per twin: before a twin's step runs, its own grad
mode / autocast / deterministic settings are put in place, and afterwards they
are saved and the neutral state restored, so a ``Do`` that disables grad in
one twin does not leak into the other (nor into the rest of the test session).

The outcome of every case is recorded (see ``conftest.py``) so the session
ends with a per-class table: cases, passed, wrong results, internal errors,
replays / calls.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import inspect
import io
import itertools
import linecache
import math
import os
import random
import sys
import textwrap
import types
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import torch

try:
    import numpy as np
except ImportError:  # pragma: no cover - numpy is a dev dependency
    np = None

import fullgraph.runtime as fr

VERBOSE = bool(os.environ.get("FULLGRAPH_SOUNDNESS_VERBOSE"))
# Inductor reorders reductions and fuses: its results differ from eager in the last
# bits (scaled to the dtype); the eager backend must match exactly.
INDUCTOR_TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
INDUCTOR_TOLERANCE_BY_DTYPE = {
    torch.float64: {"rtol": 1e-10, "atol": 1e-12},
    torch.bfloat16: {"rtol": 1.6e-2, "atol": 1e-5},
    torch.float16: {"rtol": 1e-3, "atol": 1e-5},
}

# ---------------------------------------------------------------------------
# Programs


class Env(types.SimpleNamespace):
    """One twin's program: ``target`` (what gets compiled) plus whatever state the
    script's steps and the watch need (``env.model``, ``env.ns``, ``env.log``...).

    The harness sets ``env.call`` (the compiled or the plain target), ``env.compiled``
    (bool) and ``env.twin`` ("eager" / "compiled")."""


_program_ids = itertools.count()


def load_program(source: str, name: str = "program", **inject: Any) -> types.ModuleType:
    """Run ``source`` in a fresh module namespace and return the module.

    Each call gives new globals, new functions and new classes, so two twins
    built from the same source share nothing.  ``inject`` pre-populates the
    namespace (e.g. a helper object).  The module is registered in
    ``sys.modules`` (dataclasses and NamedTuples look their module up) and its
    source in ``linecache`` (tracebacks and ``inspect`` show the lines)."""
    source = textwrap.dedent(source)
    modname = f"soundness_program_{name}_{next(_program_ids)}"
    module = types.ModuleType(modname)
    module.__dict__.update(inject)
    filename = f"<soundness {modname}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    sys.modules[modname] = module
    exec(compile(source, filename, "exec"), module.__dict__)  # noqa: S102 - test programs
    return module


def program_env(source: str, target: str, name: str = "program", **inject: Any) -> Env:
    """An env for a program given as source: ``env.ns`` is the module, ``env.target``
    its attribute ``target`` (a function, or a module instance built by the source)."""
    ns = load_program(source, name, **inject)
    return Env(ns=ns, target=getattr(ns, target))


# ---------------------------------------------------------------------------
# Scripts


@dataclasses.dataclass
class Call:
    """Call the target.  ``args`` / ``kwargs``: values (tensors are deep-copied per
    twin, aliasing among them preserved) or a function of the env returning them
    (called after seeding, so ``torch.randn`` gives both twins the same data).
    ``context``: a function of the env returning a context manager the call runs in.
    ``then(env, result)``: runs right after the call, outside it (``loss.backward()``
    on what a compiled forward returned); what it raises or prints is compared too."""

    args: Any = ()
    kwargs: Any = None
    context: Callable[[Env], Any] | None = None
    label: str = ""
    then: Callable[[Env, Any], Any] | None = None

    def describe(self) -> str:
        return self.label or "call"


@dataclasses.dataclass
class Do:
    """Change the program's state between calls: ``action(env)`` runs on each twin."""

    action: Callable[[Env], Any]
    label: str = ""

    def describe(self) -> str:
        return f"do {self.label or getattr(self.action, '__name__', 'action')}"


def calls(n: int, args: Any = (), kwargs: Any = None, **options: Any) -> list[Call]:
    """``n`` identical call steps (fresh arguments each time when ``args`` is a function)."""
    return [Call(args, kwargs, **options) for _ in range(n)]


# -- helpers the ordinary-program classes (16, 17) share ------------------------


def vec(env):
    """A fresh (4,) argument."""
    return torch.randn(4)


def mat(env):
    """A fresh (2, 4) argument."""
    return torch.randn(2, 4)


def prog(source: str, target: str = "f", name: str = "ordinary", seed: int = 0):
    """An env factory: ``source`` run in a fresh module namespace, ``target`` compiled."""

    def build() -> Env:
        torch.manual_seed(seed)
        return program_env(source, target, name)

    return build


def module_prog(source: str, factory: str = "make", name: str = "module", seed: int = 0):
    """An env factory for a program whose ``factory()`` builds the module compiled:
    ``env.target`` and ``env.module`` are the module each twin builds."""

    def build() -> Env:
        env = prog(source, target=factory, name=name, seed=seed)()
        env.target = env.module = env.target()
        return env

    return build


def setg(name: str, value_expr: str) -> Do:
    """A Do step: ``ns.<name> = eval(value_expr, ns)`` (each twin its own objects)."""

    def action(env):
        setattr(env.ns, name, eval(value_expr, vars(env.ns)))

    return Do(action, f"{name} = {value_expr}")


def execg(code: str) -> Do:
    """A Do step: run ``code`` in the twin's program namespace."""

    def action(env):
        exec(code, vars(env.ns))  # noqa: S102 - test programs

    return Do(action, code)


@dataclasses.dataclass
class Case:
    """A program factory and a script of calls and state changes.

    ``watch(env)`` returns the state to compare after each call (nested values;
    ``None``: the default snapshot).  ``min_hits``: after the script, the compiled
    twin must have replayed at least this many calls; ``max_monitor_runs``: and
    been monitored at most this many times (replay expectations).
    ``compare_warnings``: the warnings each call issues are compared too.
    ``compile_kwargs``: extra keyword arguments for ``fullgraph.runtime.compile``."""

    name: str
    build: Callable[[], Env]
    script: list
    watch: Callable[[Env], Any] | None = None
    min_hits: int | None = None
    max_monitor_runs: int | None = None
    compare_warnings: bool = False
    tolerance: dict | None = None
    compile_kwargs: dict = dataclasses.field(default_factory=dict)
    seed: int = 1234
    all_calls_raise: bool = False  # otherwise a case whose every eager call raises is broken


# ---------------------------------------------------------------------------
# Outcomes


class SoundnessFailure(AssertionError):
    """The compiled twin differs from the eager twin.  ``kind``: "wrong" (a
    different result, a lost or extra effect), "internal" (the compiled call
    raised where eager did not, or raised something else), or "no-replay"
    (correct, but the replay expectation was not met)."""

    def __init__(self, kind: str, message: str):
        super().__init__(f"[{kind}] {message}")
        self.kind = kind


class BrokenCase(Exception):
    """The case itself is wrong (its program never runs), not the runtime."""


@dataclasses.dataclass
class CaseResult:
    case: str
    backend: str
    outcome: str = "pass"  # pass | wrong | internal | no-replay
    calls: int = 0
    hits: int = 0
    monitor_runs: int = 0
    fallbacks: int = 0
    records: int = 0
    fallback_reason: str | None = None
    detail: str = ""


# The result of the case run most recently in this process (conftest attaches it
# to the test's report so the session summary can count it, also under xdist).
RESULTS: list[CaseResult] = []


# ---------------------------------------------------------------------------
# Global torch state, kept per twin


def global_state() -> dict:
    state = {
        "grad_enabled": torch.is_grad_enabled(),
        "inference_mode": torch.is_inference_mode_enabled(),
        "deterministic": torch.are_deterministic_algorithms_enabled(),
        "deterministic_warn_only": torch.is_deterministic_algorithms_warn_only_enabled(),
        "default_dtype": torch.get_default_dtype(),
        "autocast_cpu": torch.is_autocast_enabled("cpu"),
        "autocast_cpu_dtype": torch.get_autocast_dtype("cpu"),
        "is_compiling": torch.compiler.is_compiling(),
    }
    return state


def set_global_state(state: dict) -> None:
    torch.set_grad_enabled(state["grad_enabled"])
    torch.use_deterministic_algorithms(
        state["deterministic"], warn_only=state["deterministic_warn_only"]
    )
    torch.set_default_dtype(state["default_dtype"])
    torch.set_autocast_enabled("cpu", state["autocast_cpu"])
    torch.set_autocast_dtype("cpu", state["autocast_cpu_dtype"])


def rng_state() -> dict:
    state = {"torch": torch.get_rng_state(), "random": random.getstate()}
    if np is not None:
        kind, keys, pos, has_gauss, cached = np.random.get_state()
        state["numpy"] = (kind, torch.from_numpy(keys.copy()), pos, has_gauss, cached)
    return state


def seed_all(seed: int) -> None:
    torch.manual_seed(seed)
    random.seed(seed)
    if np is not None:
        np.random.seed(seed % (2**32))


# ---------------------------------------------------------------------------
# Snapshots and comparison


def default_watch(env: Env) -> dict:
    """Every module reachable from the env's attributes (parameters, buffers, grads,
    training flags) and the plain-data globals and modules of a program loaded from
    source."""
    snapshot: dict = {}
    seen: set = set()
    for name, value in vars(env).items():
        if name in ("call", "compiled", "twin"):
            continue
        if _is(value, torch.nn.Module) and id(value) not in seen:
            seen.add(id(value))
            snapshot[name] = module_state(value)
        elif name == "ns" and _is(value, types.ModuleType):
            snapshot["globals"] = plain_globals(value)
            for global_name, global_value in vars(value).items():
                # the program's models and optimizers' modules: what training changes
                if _is(global_value, torch.nn.Module) and id(global_value) not in seen:
                    seen.add(id(global_value))
                    snapshot[f"global {global_name}"] = module_state(global_value)
        elif _is_plain(value):
            snapshot[name] = copy_value(value)
    return snapshot


def module_state(module: torch.nn.Module) -> dict:
    return {
        "params": {n: copy_value(p) for n, p in module.named_parameters()},
        "grads": {n: copy_value(p.grad) for n, p in module.named_parameters()},
        "buffers": {n: copy_value(b) for n, b in module.named_buffers()},
        "training": {n: m.training for n, m in module.named_modules()},
        "attrs": {
            n: {k: copy_value(v) for k, v in _own_attributes(m) if _is_plain(v) and k != "training"}
            for n, m in module.named_modules()
        },
    }


def _own_attributes(module: torch.nn.Module):
    """A module's attributes; of a compiled submodule, those of the module it compiles
    (its records and statistics are fullgraph's, which a twin's run makes or not)."""
    if isinstance(module, fr.CompiledFunction):
        module = module.module
    return vars(module).items()


def plain_globals(module: types.ModuleType) -> dict:
    return {
        name: copy_value(value)
        for name, value in vars(module).items()
        if not name.startswith("__") and _is_plain(value)
    }


_PLAIN_SCALARS = (bool, int, float, complex, str, bytes, type(None))


# The harness looks at the program's objects without running the program's code: a
# failed ``isinstance`` reads ``__class__`` through a class's own ``__getattribute__``
# (a class counting its accesses would count the harness's looks), and ``hasattr`` on a
# class runs its metaclass's ``__getattr__``, which may raise anything (a KeyError).
def _is(value: Any, kinds: Any) -> bool:
    """``isinstance`` by the value's real type."""
    return issubclass(type(value), kinds)


def _static(owner: Any, name: str) -> Any:
    try:
        return inspect.getattr_static(owner, name)
    except AttributeError:
        return None


def _dataclass_instance(value: Any) -> bool:
    return not _is(value, type) and _static(type(value), "__dataclass_fields__") is not None


def _named_tuple(value: Any) -> bool:
    return _is(value, tuple) and _static(type(value), "_fields") is not None


def _fields_of(value: Any) -> Any:
    return _static(type(value), "_fields") if _is(value, tuple) else None


def _is_plain(value: Any, depth: int = 0) -> bool:
    if depth > 6:
        return False
    if _is(value, _PLAIN_SCALARS + (torch.Tensor, torch.Size)):
        return True
    if _is(value, (list, tuple, set, frozenset)):
        return all(_is_plain(v, depth + 1) for v in value)
    if _is(value, dict):
        return all(_is_plain(v, depth + 1) for v in value.values())
    return bool(_dataclass_instance(value))


def copy_value(value: Any) -> Any:
    """A snapshot: tensors cloned (keeping requires_grad), containers copied."""
    if _is(value, torch.Tensor) and torch.nn.parameter.is_lazy(value):
        return "<uninitialized parameter>"
    if _is(value, torch.Tensor):
        copied = value.detach().clone()
        copied.requires_grad_(value.requires_grad)
        # A leaf's .grad is state too (a parameter in a list the program scales the
        # gradients of); intermediate tensors have none (reading it warns).
        grad = value.grad.detach().clone() if value.is_leaf and value.grad is not None else None
        return _Snap(copied, value.is_leaf, value.grad_fn is not None, grad)
    if _is(value, torch.Size):
        return value
    if np is not None and _is(value, np.ndarray):
        return value.copy()  # an array may view a tensor's memory: its values as of now
    if _named_tuple(value):
        return type(value)(*(copy_value(v) for v in value))
    if _is(value, (list, tuple)):
        return type(value)(copy_value(v) for v in value)
    if _is(value, dict):
        copied = copy.copy(value)
        for k in list(copied):
            copied[k] = copy_value(value[k])
        return copied
    if _is(value, (set, frozenset)):
        return type(value)(value)
    if _dataclass_instance(value):
        return _SnapDataclass(
            type(value),
            {f.name: copy_value(getattr(value, f.name)) for f in dataclasses.fields(value)},
        )
    return value


@dataclasses.dataclass
class _Snap:
    tensor: torch.Tensor
    is_leaf: bool
    has_grad_fn: bool
    grad: torch.Tensor | None = None

    def __repr__(self) -> str:
        return repr(self.tensor)


@dataclasses.dataclass
class _SnapDataclass:
    cls: type
    fields: dict


def _float_equal(a: float, b: float, tolerance: dict | None) -> bool:
    if math.isnan(a) and math.isnan(b):
        return True
    if tolerance is None:
        return a == b
    return math.isclose(a, b, rel_tol=tolerance["rtol"], abs_tol=tolerance["atol"])


def _type_name(value: Any) -> str:
    t = type(value)
    return (
        t.__qualname__
        if t.__module__ in ("builtins", "torch")
        else f"{t.__module__}.{t.__qualname__}"
    )


def diff(expected: Any, actual: Any, where: str, tolerance: dict | None, out: list[str]) -> None:
    """Append to ``out`` every difference between eager's ``expected`` and the
    compiled twin's ``actual``, as a user would see it."""
    if len(out) > 20:
        return
    if _is(expected, _Snap) and _is(actual, _Snap):
        if expected.is_leaf != actual.is_leaf:
            out.append(f"{where}: is_leaf {actual.is_leaf}, eager {expected.is_leaf}")
        if expected.has_grad_fn != actual.has_grad_fn:
            out.append(
                f"{where}: grad_fn {'set' if actual.has_grad_fn else 'None'}, "
                f"eager {'set' if expected.has_grad_fn else 'None'}"
            )
        diff(expected.tensor, actual.tensor, where, tolerance, out)
        diff(expected.grad, actual.grad, f"{where}.grad", tolerance, out)
        return
    if _is(expected, _SnapDataclass) and _is(actual, _SnapDataclass):
        if expected.cls.__qualname__ != actual.cls.__qualname__:
            out.append(
                f"{where}: type {actual.cls.__qualname__}, eager {expected.cls.__qualname__}"
            )
            return
        for name in expected.fields:
            diff(expected.fields[name], actual.fields.get(name), f"{where}.{name}", tolerance, out)
        return
    # The twins' classes are distinct objects when built from source: compare by name.
    te, ta = type(expected), type(actual)
    if te is not ta and not (
        te.__qualname__ == ta.__qualname__
        and te.__module__.startswith("soundness_program_")
        and ta.__module__.startswith("soundness_program_")
    ):
        out.append(
            f"{where}: type {_type_name(actual)} ({actual!r:.80}), eager {_type_name(expected)} ({expected!r:.80})"
        )
        return
    if _is(expected, torch.Tensor):
        _diff_tensor(expected, actual, where, tolerance, out)
    elif np is not None and _is(expected, np.ndarray):
        _diff_array(expected, actual, where, tolerance, out)
    elif _is(expected, float):
        if not _float_equal(expected, actual, tolerance):
            out.append(f"{where}: {actual!r}, eager {expected!r}")
    elif _is(expected, (complex, torch.Size, str, bytes, int, bool, type(None))):
        if expected != actual:
            out.append(f"{where}: {actual!r}, eager {expected!r}")
    elif _is(expected, (list, tuple)):
        if len(expected) != len(actual):
            out.append(
                f"{where}: length {len(actual)} ({actual!r:.120}), eager {len(expected)} ({expected!r:.120})"
            )
            return
        names = _fields_of(expected)
        for i, (e, a) in enumerate(zip(expected, actual)):
            diff(e, a, f"{where}.{names[i]}" if names else f"{where}[{i}]", tolerance, out)
    elif _is(expected, dict):
        if list(expected) != list(actual):
            out.append(f"{where}: keys {list(actual)!r:.200}, eager {list(expected)!r:.200}")
            return
        for key in expected:
            diff(expected[key], actual[key], f"{where}[{key!r}]", tolerance, out)
    elif _is(expected, (set, frozenset)):
        if expected != actual:
            out.append(f"{where}: {actual!r:.200}, eager {expected!r:.200}")
    elif _dataclass_instance(expected):
        for field in dataclasses.fields(expected):
            diff(
                getattr(expected, field.name),
                getattr(actual, field.name),
                f"{where}.{field.name}",
                tolerance,
                out,
            )
    elif _is(expected, torch.dtype | torch.device) and expected != actual:
        out.append(f"{where}: {actual!r}, eager {expected!r}")
    # Other objects (modules, functions, handles): compared by identity role, see roles().


def _diff_tensor(
    e: torch.Tensor, a: torch.Tensor, where: str, tolerance: dict | None, out: list[str]
) -> None:
    for attr in ("dtype", "shape", "device", "layout", "requires_grad"):
        if getattr(e, attr) != getattr(a, attr):
            out.append(f"{where}: {attr} {getattr(a, attr)}, eager {getattr(e, attr)}")
            return
    if e.is_leaf != a.is_leaf:
        out.append(f"{where}: is_leaf {a.is_leaf}, eager {e.is_leaf}")
    if (e.grad_fn is None) != (a.grad_fn is None):
        out.append(f"{where}: grad_fn {a.grad_fn}, eager {e.grad_fn}")
    e_, a_ = e.detach(), a.detach()
    if e_.is_quantized or e_.is_sparse:
        e_, a_ = e_.to_dense(), a_.to_dense()
    if tolerance is None:
        same = e_.shape == a_.shape and (
            torch.equal(e_, a_)
            or (e_.is_floating_point() or e_.is_complex())
            and bool(((e_ == a_) | (torch.isnan(e_) & torch.isnan(a_))).all())
        )
        if not same:
            out.append(f"{where}: values differ: {_show(a_)}, eager {_show(e_)}")
    else:
        if tolerance is INDUCTOR_TOLERANCE:
            tolerance = INDUCTOR_TOLERANCE_BY_DTYPE.get(e.dtype, tolerance)
        try:
            torch.testing.assert_close(a_, e_, equal_nan=True, **tolerance)
        except AssertionError as error:
            first = str(error).strip().splitlines()
            out.append(
                f"{where}: values differ ({' '.join(first[:3])}): {_show(a_)}, eager {_show(e_)}"
            )


def _diff_array(e: Any, a: Any, where: str, tolerance: dict | None, out: list[str]) -> None:
    """numpy arrays: dtype and shape, then the values as tensors (or as objects)."""
    if e.dtype != a.dtype or e.shape != a.shape:
        out.append(f"{where}: array {a.dtype} {a.shape}, eager {e.dtype} {e.shape}")
        return
    try:
        et, at = torch.from_numpy(np.ascontiguousarray(e)), torch.from_numpy(np.ascontiguousarray(a))
    except TypeError:  # object or string arrays
        if e.tolist() != a.tolist():
            out.append(f"{where}: {a!r:.120}, eager {e!r:.120}")
        return
    _diff_tensor(et, at, where, tolerance, out)


def _show(t: torch.Tensor) -> str:
    text = repr(t.flatten()[:6].tolist()) if t.numel() else "[]"
    return f"{text}{'...' if t.numel() > 6 else ''}"


def leaves(value: Any, path: str, depth: int = 0) -> Iterable[tuple[str, Any]]:
    """(path, object) for the value and everything nested in tuples/lists/dicts."""
    yield path, value
    if depth > 4:
        return
    if _is(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from leaves(v, f"{path}[{i}]", depth + 1)
    elif _is(value, dict):
        for k, v in list(value.items())[:50]:
            yield from leaves(v, f"{path}[{k!r}]", depth + 1)
    elif _dataclass_instance(value):
        for f in dataclasses.fields(value):
            yield from leaves(getattr(value, f.name), f"{path}.{f.name}", depth + 1)


def known_objects(env: Env, args: tuple, kwargs: dict) -> dict[int, str]:
    """Objects the program already had before the call, by id: the arguments (and
    what they contain), the env's attributes, module parameters and buffers."""
    known: dict[int, str] = {}

    def add(path: str, value: Any) -> None:
        for p, v in leaves(value, path):
            if not _is(v, _PLAIN_SCALARS) and id(v) not in known:
                known[id(v)] = p

    add("args", args)
    add("kwargs", kwargs)
    for name, value in vars(env).items():
        if name in ("call", "compiled", "twin", "target"):
            continue
        if _is(value, types.ModuleType):
            for gname, gvalue in vars(value).items():
                if not gname.startswith("__"):
                    add(f"{name}.{gname}", gvalue)
            continue
        add(f"env.{name}", value)
        if _is(value, torch.nn.Module):
            for n, p in value.named_parameters():
                add(f"env.{name}.{n}", p)
            for n, b in value.named_buffers():
                add(f"env.{name}.{n}", b)
    if _is(env.target, torch.nn.Module):
        add("module", env.target)
        for n, p in env.target.named_parameters():
            add(f"module.{n}", p)
        for n, b in env.target.named_buffers():
            add(f"module.{n}", b)
    return known


def roles(result: Any, known: dict[int, str], storages: dict[int, str]) -> dict[str, str]:
    """For each object in the result: which pre-existing object it is, or which
    pre-existing tensor's memory it shares (a view)."""
    found: dict[str, str] = {}
    for path, value in leaves(result, "result"):
        if _is(value, (_PLAIN_SCALARS, torch.Size)):
            continue
        if id(value) in known:
            found[path] = f"is {known[id(value)]}"
        elif _has_storage(value):
            ptr = _storage_ptr(value)
            if ptr in storages:
                found[path] = f"shares memory with {storages[ptr]}"
    return found


def _has_storage(value: Any) -> bool:
    return (
        _is(value, torch.Tensor)
        and not torch.nn.parameter.is_lazy(value)
        and value.layout == torch.strided
        and value.numel() > 0
    )


def _storage_ptr(t: torch.Tensor) -> int | None:
    try:
        return t.untyped_storage().data_ptr()
    except Exception:  # noqa: BLE001 - e.g. a tensor subclass without storage
        return None


def known_storages(known_paths: dict[int, str], objects: dict[int, Any]) -> dict[int, str]:
    storages: dict[int, str] = {}
    for oid, path in known_paths.items():
        value = objects.get(oid)
        if _has_storage(value):
            ptr = _storage_ptr(value)
            if ptr is not None and ptr not in storages:
                storages[ptr] = path
    return storages


# ---------------------------------------------------------------------------
# Running


@dataclasses.dataclass
class Observation:
    label: str
    result: Any = None
    error: tuple[str, str] | None = None  # (type name, message)
    error_object: BaseException | None = None
    stdout: str = ""
    warnings: list = dataclasses.field(default_factory=list)
    rng: dict = dataclasses.field(default_factory=dict)
    torch_state: dict = dataclasses.field(default_factory=dict)
    watched: Any = None
    roles: dict = dataclasses.field(default_factory=dict)
    replay: str = ""  # for the compiled twin: hit / monitor / fallback


class Twin:
    def __init__(self, case: Case, name: str, compiler: Callable[[Any], Any] | None):
        self.case = case
        self.name = name
        self.env = case.build()
        if not isinstance(self.env, Env):
            raise TypeError(f"case {case.name}: build() must return an Env, got {type(self.env)}")
        self.env.twin = name
        self.env.compiled = compiler is not None
        self.compiled = compiler(self.env.target) if compiler is not None else None
        self.env.call = self.compiled if compiler is not None else self.env.target
        self.torch_state = None  # set by run_case

    def stats(self):
        return getattr(self.compiled, "stats", None)

    def _replay_kind(self, before) -> str:
        stats = self.stats()
        if stats is None or before is None:
            return ""
        if stats.hits > before[0]:
            return "hit"
        if stats.fallbacks > before[2]:
            return "fallback"
        if stats.monitor_runs > before[1]:
            return "monitored"
        return "?"

    def step(self, step: Call | Do, index: int) -> Observation | None:
        env = self.env
        set_global_state(self.torch_state)
        try:
            # Both twins run each step from the same seed: a Do that draws random data
            # (a backward on torch.randn input) must change both twins alike.
            seed_all(self.case.seed + index)
            if isinstance(step, Do):
                step.action(env)
                return None
            args = step.args(env) if callable(step.args) else copy.deepcopy(step.args)
            if not isinstance(args, tuple):
                args = (args,)
            kwargs = step.kwargs(env) if callable(step.kwargs) else copy.deepcopy(step.kwargs or {})
            known = known_objects(env, args, kwargs)
            objects = {}
            for path_value in (args, kwargs, *vars(env).values()):
                for _, v in leaves(path_value, ""):
                    objects[id(v)] = v
            if _is(env.target, torch.nn.Module):
                for t in itertools.chain(env.target.parameters(), env.target.buffers()):
                    objects[id(t)] = t
            for value in vars(env).values():
                if _is(value, types.ModuleType):
                    for v in vars(value).values():
                        for _, leaf in leaves(v, ""):
                            objects[id(leaf)] = leaf
                elif _is(value, torch.nn.Module):
                    for t in itertools.chain(value.parameters(), value.buffers()):
                        objects[id(t)] = t
            storages = known_storages(known, objects)
            obs = Observation(step.describe())
            stats = self.stats()
            before = (stats.hits, stats.monitor_runs, stats.fallbacks) if stats else None
            out = io.StringIO()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    with contextlib.redirect_stdout(out):
                        context = step.context(env) if step.context else contextlib.nullcontext()
                        with context:
                            obs.result = env.call(*args, **kwargs)
                            if step.then is not None:
                                step.then(env, obs.result)
                except Exception as error:  # noqa: BLE001 - compared with the other twin
                    obs.error = (type(error).__name__, str(error))
                    obs.error_object = error
            obs.replay = self._replay_kind(before)
            obs.stdout = out.getvalue()
            obs.warnings = [(w.category.__name__, str(w.message)) for w in caught]
            obs.rng = rng_state()
            obs.torch_state = global_state()
            watch = self.case.watch or default_watch
            obs.watched = copy_value(watch(env))
            obs.roles = roles(obs.result, known, storages)
            obs.result = copy_value(obs.result) if obs.error is None else None
            return obs
        finally:
            self.torch_state = global_state()


def compare(
    expected: Observation, actual: Observation, tolerance: dict | None, case: Case
) -> tuple[str, list[str]] | None:
    """None when the twins agree; else (kind, differences)."""
    problems: list[str] = []
    if expected.error is None and actual.error is not None:
        return "internal", [
            f"compiled call raised {actual.error[0]}: {actual.error[1][:500]} (eager returned normally)"
        ]
    if expected.error is not None and actual.error is not None and expected.error != actual.error:
        return "internal", [
            (
                f"compiled call raised {actual.error[0]}: {actual.error[1][:300]}; "
                f"eager raised {expected.error[0]}: {expected.error[1][:300]}"
            )
        ]
    if expected.error is not None and actual.error is None:
        problems.append(
            f"eager raised {expected.error[0]}: {expected.error[1][:300]}; the compiled call returned "
            f"{actual.result!r:.200}"
        )
    if expected.error is None:
        diff(expected.result, actual.result, "result", tolerance, problems)
        if expected.roles != actual.roles:
            problems.append(f"identity of the result: {actual.roles}, eager {expected.roles}")
    if expected.stdout != actual.stdout:
        problems.append(f"stdout {actual.stdout!r:.300}, eager {expected.stdout!r:.300}")
    if case.compare_warnings and expected.warnings != actual.warnings:
        problems.append(f"warnings {actual.warnings!r:.300}, eager {expected.warnings!r:.300}")
    for key in expected.rng:
        e, a = expected.rng[key], actual.rng[key]
        same = torch.equal(e, a) if key == "torch" else _same_rng(e, a)
        if not same:
            problems.append(f"{key} RNG state differs after the call")
    if expected.torch_state != actual.torch_state:
        changed = {
            k: (actual.torch_state[k], expected.torch_state[k])
            for k in expected.torch_state
            if expected.torch_state[k] != actual.torch_state[k]
        }
        problems.append(f"torch global state after the call (compiled, eager): {changed}")
    diff(expected.watched, actual.watched, "state", tolerance, problems)
    if problems:
        return "wrong", problems
    return None


def _same_rng(e: Any, a: Any) -> bool:
    if isinstance(e, torch.Tensor):
        return torch.equal(e, a)
    if isinstance(e, tuple):
        return len(e) == len(a) and all(_same_rng(x, y) for x, y in zip(e, a))
    return e == a


def fullgraph_compiler(backend: str, **kwargs: Any) -> Callable[[Any], Any]:
    return lambda target: fr.compile(target, backend=backend, **kwargs)


def run_case(
    case: Case, backend: str = "eager", compiler: Callable[[Any], Any] | None = None
) -> CaseResult:
    """Run ``case`` on an eager twin and a compiled twin; raise
    :class:`SoundnessFailure` at the first call where they differ (or when the
    replay expectation is not met).  ``compiler``: replaces fullgraph (the
    harness's self-test plants a wrong one)."""
    tolerance = case.tolerance
    if tolerance is None and backend == "inductor":
        tolerance = INDUCTOR_TOLERANCE
    result = CaseResult(case.name, backend)
    RESULTS.append(result)
    neutral = global_state()
    log: list[str] = []
    compiled = None
    try:
        eager = Twin(case, "eager", None)
        try:
            compiled = Twin(
                case, "compiled", compiler or fullgraph_compiler(backend, **case.compile_kwargs)
            )
        except Exception as error:
            result.outcome = "internal"
            raise SoundnessFailure(
                "internal", f"{case.name}: compiling failed: {error!r}"
            ) from error
        eager.torch_state = dict(neutral)
        compiled.torch_state = dict(neutral)
        eager_errors = []
        for index, step in enumerate(case.script):
            e = eager.step(step, index)
            if e is not None:
                eager_errors.append(e.error)
            try:
                a = compiled.step(step, index)
            except Exception as error:  # a Do step that raised only in the compiled twin
                raise SoundnessFailure(
                    "internal", f"{case.name} step {index} ({step.describe()}): {error!r}"
                ) from error
            if isinstance(step, Do):
                log.append(f"  step {index}: {step.describe()}")
                continue
            result.calls += 1
            log.append(
                f"  step {index}: {step.describe()} [{a.replay}]"
                + (f" eager raised {e.error[0]}" if e.error else "")
            )
            verdict = compare(e, a, tolerance, case)
            if verdict is not None:
                kind, problems = verdict
                result.outcome = kind
                stats = compiled.stats()
                message = (
                    f"{case.name} ({backend}): step {index} ({step.describe()}, compiled call "
                    f"was {a.replay or 'not fullgraph'}): {problems[0]}\n    "
                    + "\n    ".join(problems[1:])
                    + "\n  script so far:\n"
                    + "\n".join(log)
                    + (f"\n  stats: {stats}" if stats is not None else "")
                )
                result.detail = message
                error = SoundnessFailure(kind, message)
                if a.error_object is not None:
                    raise error from a.error_object
                raise error
        if eager_errors and all(eager_errors) and not case.all_calls_raise:
            raise BrokenCase(f"{case.name}: every eager call raised, e.g. {eager_errors[0]}")
        stats = compiled.stats()
        if VERBOSE:
            print(f"\n{case.name} ({backend}): {stats}\n" + "\n".join(log))
        if stats is not None:
            if case.min_hits is not None and stats.hits < case.min_hits:
                result.outcome = "no-replay"
                raise SoundnessFailure(
                    "no-replay",
                    f"{case.name} ({backend}): {stats.hits} replays, expected at least "
                    f"{case.min_hits}; {stats}\n" + "\n".join(log),
                )
            if case.max_monitor_runs is not None and stats.monitor_runs > case.max_monitor_runs:
                result.outcome = "no-replay"
                raise SoundnessFailure(
                    "no-replay",
                    f"{case.name} ({backend}): {stats.monitor_runs} monitoring runs, expected at "
                    f"most {case.max_monitor_runs}; {stats}\n" + "\n".join(log),
                )
        return result
    except SoundnessFailure:
        raise
    except Exception:
        # The harness itself, a program factory or an eager Do step failed: a broken case.
        result.outcome = "broken-case"
        raise
    finally:
        stats = compiled.stats() if compiled is not None else None
        if stats is not None:
            result.hits = stats.hits
            result.monitor_runs = stats.monitor_runs
            result.fallbacks = stats.fallbacks
            result.records = stats.records
            result.fallback_reason = stats.fallback_reason
        set_global_state(neutral)


# ---------------------------------------------------------------------------
# pytest helpers


def backends(
    *,
    inductor: bool = False,
    xfail: str | None = None,
    xfail_eager: str | None = None,
    xfail_inductor: str | None = None,
):
    """``@pytest.mark.parametrize("backend", ...)``: eager always, Inductor when asked
    (marked ``inductor``); ``xfail*``: a known runtime bug (strict: the test turns
    into a failure as soon as the runtime is fixed)."""
    import pytest

    def param(name: str, reason: str | None, marks: list):
        if reason:
            marks = [
                *marks,
                pytest.mark.xfail(strict=True, reason=reason, raises=SoundnessFailure),
            ]
        return pytest.param(name, marks=marks, id=name)

    params = [param("eager", xfail_eager or xfail, [])]
    if inductor:
        params.append(param("inductor", xfail_inductor or xfail, [pytest.mark.inductor]))
    return pytest.mark.parametrize("backend", params)
