"""The program's attribute hooks, kept out of fullgraph's own reads of its objects.

A class of the program may define ``__getattribute__`` or ``__getattr__``, and the
hook may do anything (count its calls, append to a log).  The program runs it on
its own reads; the monitor must not run it on *its* reads, which are many and
implicit: a failed ``isinstance(obj, T)`` reads ``obj.__class__`` through
``__getattribute__``, ``hasattr`` probes run ``__getattr__``, building a record
reads ``obj.__dict__``.  A class counting its accesses counted 45 for a call that
made one.

So, for one monitoring run, each such hook of a program class (one defined in
the program's own code, not in a library's) is replaced in its class by a
stand-in that runs the program's hook while the program runs and, while
fullgraph's own code runs (``ProgramHooks.fullgraph``, switched by the driver,
the torch-call handler and the runs' callers), does what the class would do
without it (the next ``__getattribute__`` of the MRO, or no ``__getattr__``).
The program's hooks are back in place as soon as the run is over, before any
guard or replay runs.

A guard re-reads what the run read, through the same path: through an object
whose hook changed something when the program ran it (a counter, a log), the
guard would change it again on every call, and a replay would change it twice
(the guard, then the mock replaying the hook's effects).  Such a record is
refused (``refuse_reads_through``); a hook that changed nothing (a wrapper
forwarding to what it wraps) is run by the guard harmlessly, and one on objects
the function made is read by no guard: their records replay.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import types
from collections.abc import Iterator
from typing import Any

from fullgraph.runtime.monitor.user_code import is_user_code, user_property
from fullgraph.runtime.sources import (
    AttrSource,
    HasAttrSource,
    HooksSource,
    LookupSource,
    Source,
    base_of,
)

HOOK_NAMES = ("__getattribute__", "__getattr__")


@dataclasses.dataclass
class _Installed:
    owner: type
    name: str
    original: types.FunctionType
    stand_in: Any


class ProgramHooks:
    """The program's attribute hooks set aside for one monitoring run.

    ``fullgraph``: True while fullgraph's own code runs (the stand-ins then skip the
    program's hooks), False while the program runs."""

    def __init__(self) -> None:
        self.fullgraph = True
        self.installed: list[_Installed] = []
        self.codes: set[types.CodeType] = set()  # the program's hooks' code
        # The code of hooks that changed something when the program ran them (classes
        # a factory makes share it).
        self.effectful: set[types.CodeType] = set()

    def install(self, owner: type, name: str, original: types.FunctionType) -> None:
        stand_in = _stand_in(self, owner, name, original)
        try:
            type.__setattr__(owner, name, stand_in)  # past a metaclass's own __setattr__
        except (TypeError, AttributeError):  # a class that can't take one: left as it is
            return
        self.installed.append(_Installed(owner, name, original, stand_in))
        self.codes.add(original.__code__)

    def adopt(self, klass: Any) -> None:
        """A class the program made during the run (a ``class`` statement in the
        function): its hooks are set aside before the monitor meets its instances."""
        if not isinstance(klass, type):
            return
        for name in HOOK_NAMES:
            hook = klass.__dict__.get(name)
            if _program_hook(hook):
                self.install(klass, name, hook)

    def restore(self) -> None:
        """Put the program's hooks back (unless the program replaced one meanwhile); a
        stand-in the program kept a reference to runs the program's hook from now on."""
        self.fullgraph = False
        for entry in reversed(self.installed):
            if entry.owner.__dict__.get(entry.name) is entry.stand_in:
                type.__setattr__(entry.owner, entry.name, entry.original)
        self.installed.clear()
        self.codes.clear()

    def hook_of(self, frame: types.FrameType) -> types.CodeType | None:
        """The code of the program's hook a new frame runs, if it runs one (a class made
        during the run by other means than a ``class`` statement gets its stand-in now,
        for the reads that follow)."""
        code = frame.f_code
        if code.co_name not in HOOK_NAMES:
            return None
        if code.co_argcount:
            try:
                owner = _owner_class(frame, code)  # still holding the program's hook itself
            except Exception:  # noqa: BLE001 - an odd receiver: its hook stays the program's
                owner = None
            if owner is not None:
                self.install(owner, code.co_name, owner.__dict__[code.co_name])
        return code if code in self.codes else None


@contextlib.contextmanager
def set_aside() -> Iterator[ProgramHooks]:
    """The program's attribute hooks, replaced by stand-ins for as long as the block
    (one monitoring run and the building of its record) lasts."""
    hooks = ProgramHooks()
    try:
        try:
            for owner, name, original in _program_hooks():
                hooks.install(owner, name, original)
        except Exception:  # noqa: BLE001 - never the program's failure: run without them
            hooks.restore()
            hooks.fullgraph = True
        yield hooks
    finally:
        hooks.restore()


def _program_hooks() -> list[tuple[type, str, types.FunctionType]]:
    """Every class of the process that defines a hook in code the monitor steps into."""
    found = []
    seen: set[type] = set()
    pending = [object]
    subclasses = type.__subclasses__
    while pending:
        klass = pending.pop()
        for sub in subclasses(klass):
            if sub in seen:
                continue
            seen.add(sub)
            pending.append(sub)
            namespace = sub.__dict__
            for name in HOOK_NAMES:
                hook = namespace.get(name)
                if _program_hook(hook):
                    found.append((sub, name, hook))
    return found


def _stand_in(hooks: ProgramHooks, owner: type, name: str, original: types.FunctionType):
    if name == "__getattribute__":

        @functools.wraps(original)
        def __getattribute__(self, *args, **kwargs):
            if hooks.fullgraph:
                return _next_hook(owner, name, self)(self, *args)
            return original(self, *args, **kwargs)

        __getattribute__.__fullgraph_stand_in__ = True
        return __getattribute__

    @functools.wraps(original)
    def __getattr__(self, *args, **kwargs):
        if hooks.fullgraph:
            below = _next_hook(owner, name, self)
            if below is None:
                raise AttributeError(args[0] if args else name)
            return below(self, *args)
        return original(self, *args, **kwargs)

    __getattr__.__fullgraph_stand_in__ = True
    return __getattr__


_STAND_IN_CODES = frozenset(
    _stand_in(ProgramHooks(), object, name, _stand_in).__code__ for name in HOOK_NAMES
)


def original_of(value: Any) -> Any:
    """The program's hook for its stand-in (``type(obj).__getattr__`` read during the run:
    the guard checks, and the monitor steps into, the program's own function)."""
    if type(value) is types.FunctionType and value.__code__ in _STAND_IN_CODES:
        return value.__wrapped__
    return value


def _next_hook(owner: type, name: str, obj: Any) -> Any:
    """What the class would run without the program's hooks: the next ``name`` along
    ``type(obj)``'s MRO after ``owner`` that is not a stand-in (None: no __getattr__)."""
    mro = type(obj).__mro__
    start = mro.index(owner) + 1 if owner in mro else 0
    for klass in mro[start:]:
        hook = klass.__dict__.get(name)
        if hook is not None and not getattr(hook, "__fullgraph_stand_in__", False):
            if _program_hook(hook):
                continue  # another hook of the program (a class made since)
            return hook
    return None if name == "__getattr__" else object.__getattribute__


def _owner_class(frame: types.FrameType, code: types.CodeType) -> type | None:
    """The class whose hook ``frame`` runs (found from its first argument's type)."""
    receiver = frame.f_locals.get(code.co_varnames[0])
    for klass in type(receiver).__mro__:
        hook = klass.__dict__.get(code.co_name)
        if _program_hook(hook) and hook.__code__ is code:
            return klass
    return None


def _program_hook(hook: Any) -> bool:
    """A hook of the program's own code.  Not a library's, even one the monitor steps
    into: fullgraph's own code calls libraries that rely on theirs (sympy's registry of
    singletons, ``S.One``, is a ``__getattr__``; torch's symbolic shapes read it)."""
    if not isinstance(hook, types.FunctionType) or not is_user_code(hook.__code__):
        return False
    filename = hook.__code__.co_filename
    return "site-packages" not in filename and "dist-packages" not in filename


def read_through_property(run, owner: Any, source: Source, name: str) -> bool:
    """``getattr(obj, "p")`` / ``hasattr(obj, "p")`` of a property of the program's: its
    getter ran as the program's code (stepped into, what it read guarded).  The guard
    checks the property itself, as for ``obj.p``; neither the monitor (``hasattr``) nor
    the guard (``hasattr(A[0], 'p')``) runs the getter again."""
    if not user_property(type(owner), name):
        return False
    run.read_class_attribute(owner, source, name)
    return True


def effects(run) -> tuple[int, int]:
    """A count that grows with every effect the run records (stores, callouts)."""
    return run.effects_made, len(run.tape.callouts)


def refuse_reads_through(run, hooks: ProgramHooks) -> None:
    """Refuse the record when a guard or the mock would read through an object whose
    hook changed something when the program ran it (it would run again there)."""
    if not hooks.effectful:
        return
    for source in (*run.reads, *run.sources.values()):
        found = _hook_on_path(run, source, hooks.effectful)
        if found is not None:
            owner, name = found
            run.refuse(
                f"reading {source.expr()} runs {owner.__qualname__}.{name}, which changed "
                "the program's state when the program ran it: a guard or a replay would "
                "run it again"
            )
            return


def _hook_on_path(run, source: Source, effectful: set) -> tuple[type, str] | None:
    while source is not None:
        base = base_of(source)
        if isinstance(source, (AttrSource, HasAttrSource, LookupSource, HooksSource)):
            owner = run.source_values.get(base)
            attribute = getattr(source, "name", None)
            for klass in type(owner).__mro__:
                for name in HOOK_NAMES:
                    hook = original_of(klass.__dict__.get(name))
                    if (
                        isinstance(hook, types.FunctionType)
                        and hook.__code__ in effectful
                        and (name == "__getattribute__" or not _found_statically(owner, attribute))
                    ):
                        return klass, name
        source = base
    return None


def _found_statically(owner: Any, name: str | None) -> bool:
    """Whether ``owner.name`` is found without ``__getattr__`` (so it never runs it)."""
    if name is None:
        return True
    try:
        inspect.getattr_static(owner, name)
    except AttributeError:
        return False
    return True
