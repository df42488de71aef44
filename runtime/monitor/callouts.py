"""Callouts: calls the monitor replays eagerly between graphs, as the mock will.

Mixed into :class:`~fullgraph.runtime.monitor.run.MonitorRun` (through
``CallHandling``).  A callout ends the current graph segment; its result is
checked where the program reads it, or followed as an expression.  A replay
that missed after some callouts ran hands their results back (``injected``)
instead of running their effects twice.  ``warnings.warn`` is replayed at the
user's line (``warnings_blocks.warn_at``).
"""

from __future__ import annotations

import collections.abc
import functools
import inspect
import types
import warnings
from collections.abc import Callable
from typing import Any

import torch

from fullgraph.runtime import breaks, cpython
from fullgraph.runtime.capture.origins import CalloutOrigin, ExternalOrigin
from fullgraph.runtime.capture.segments import Unsupported
from fullgraph.runtime.monitor import (
    annotation_table,
    autograd_calls,
    cached_calls,
    changed_arguments,
    class_slots,
    logging_calls,
    speculation,
    training_switch,
    warnings_blocks,
)
from fullgraph.runtime.record.codegen import is_literal
from fullgraph.runtime.record.mock_support import Raised, exception_fields
from fullgraph.runtime.symbolic.scalars import Sym
from fullgraph.runtime.torch_internals import tensor_version

# Containers a call can change in place (an in-place operator, an unknown C call).
MUTABLE_CONTAINERS = (list, dict, set, bytearray, collections.deque)


def _only_reads_its_arguments(fn: Any) -> bool:
    """Output effects that show their arguments without changing them (a log call,
    not ``Logger.setLevel``)."""
    name = annotation_table.qualified_name(fn)
    if name.startswith("logging."):
        return name.rsplit(".", 1)[-1] in _LOG_CALLS
    return fn is print or name.startswith(("warnings.", "builtins.print"))


_LOG_CALLS = frozenset(
    ["debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log"]
)


_WARN_SIGNATURE = inspect.signature(
    lambda message, category=None, stacklevel=1, source=None, *, skip_file_prefixes=(): None
)


class Callouts:
    """Replayed calls: recorded on the tape in program order."""

    def _replayed_callout(self, state, fn, args, kwargs, annotation, result, fn_depth):
        if self.speculating is not None:
            # Run early, a call that must be replayed would be an effect eager never made.
            name = annotation_table.qualified_name(fn)
            speculation.block(self, state.frame, fn_depth, f"calls {name}")
            return None
        if (fn in (eval, exec) and len(args) < 2 and "globals" not in kwargs) or (
            fn in (globals, locals, vars, dir) and not args
        ):
            # ``eval("K")``, ``globals()``: the names of the frame it runs in, and a
            # replay's frame is the mock's.
            self.refuse(f"{fn.__name__}() without a namespace reads the function's own names")
        index = len(self.tape.callouts)
        beyond = self._warning_beyond(args, kwargs) if fn is warnings.warn else None
        if beyond is not None and index not in self.injected:
            # ``stacklevel`` points past the function, whose caller is fullgraph's now.
            replacement = functools.partial(warnings_blocks.warn_beyond, beyond)
            self.keepalive.append(replacement)
            cpython.replace_stack_item(state.frame, fn_depth, replacement)
        made = self.injected.get(index)
        if type(made) is cached_calls.CacheMissed and not made.made:
            del self.injected[index]  # the replay found it not cached: the call is made now
        elif index in self.injected:
            # This call already ran in the replay that missed: hand the interpreter
            # its result instead of running the effect a second time.
            replacement = Injected(self.injected.pop(index))
            self.keepalive.extend((fn, replacement))
            cpython.replace_stack_item(state.frame, fn_depth, replacement)
        return self._callout(state, fn, args, kwargs, annotation, result)

    def _warning_beyond(self, args: tuple, kwargs: dict) -> int | None:
        """How many frames out of the function ``warnings.warn(...)``'s ``stacklevel``
        points (1: the line that called it); None: at one of its own frames."""
        try:
            bound = _WARN_SIGNATURE.bind_partial(*args, **kwargs).arguments
            levels = max(int(bound.get("stacklevel", 1)), 1) - 1
        except (TypeError, ValueError):
            return None  # warnings.warn raises it itself
        if bound.get("skip_file_prefixes") or not self.frames:
            return None
        frame, root, inside = self.frames[-1].frame, self.frames[0].frame, 0
        while frame is not root:  # the frames from the warning's out to the function's
            frame, inside = frame.f_back, inside + 1
            if frame is None:
                return None
        return levels - inside if levels > inside else None

    def _located_warning(self, args: tuple, kwargs: dict) -> tuple | None:
        """``warnings.warn(...)`` as a call of ``warn_at`` with the location the warning
        has now, when that frame is the function's; of ``warn_beyond`` when
        ``stacklevel`` points further out, at a caller that may differ between calls."""
        beyond = self._warning_beyond(args, kwargs)
        if beyond is not None:
            moved = {position: position + 1 for position in range(len(args) + len(kwargs))}
            return warnings_blocks.warn_beyond, (beyond, *args), kwargs, moved
        bound = _WARN_SIGNATURE.bind_partial(*args, **kwargs).arguments
        frame = self.frames[-1].frame if self.frames else None
        for _ in range(max(int(bound.get("stacklevel", 1)), 1) - 1):
            frame = frame.f_back if frame is not None else None
        if frame is None or not any(state.frame is frame for state in self.frames):
            return None
        if bound.get("source") is not None or bound.get("skip_file_prefixes"):
            return None
        located = (
            str(frame.f_globals.get("__name__", "<string>")),
            frame.f_code.co_filename,
            frame.f_lineno,
            bound.get("message"),
            bound.get("category"),
        )
        # Where each argument of the call went (its symbol follows it): message, category.
        names = [*list(_WARN_SIGNATURE.parameters)[: len(args)], *kwargs]
        moved = {i: {"message": 3, "category": 4}.get(name) for i, name in enumerate(names)}
        return warnings_blocks.warn_at, located, {}, moved

    def _note_receiver_changed(self, fn: Any, args: tuple, name: str) -> None:
        """``Q.put(v)``, ``log.setLevel(n)``, ``sem.release()``: a replayed call with
        effects on a library object from outside may change what the program reads of
        it next (``Q.unfinished_tasks``), which a guard at entry can't vouch for: such a
        read is not recorded (torch's objects and Python's containers are followed
        elsewhere)."""
        receiver = getattr(fn, "__self__", None)
        if (
            receiver is None
            and args
            and getattr(type(args[0]), getattr(fn, "__name__", ""), None) is fn
        ):
            receiver = args[0]  # ``Q.put(v)`` made as ``Queue.put(Q, v)`` (a method load)
        kind = type(receiver)
        module = getattr(kind, "__module__", "") or ""
        if (
            receiver is None
            or isinstance(receiver, (type, types.ModuleType))
            or module.split(".")[0] in ("torch", "builtins", "collections", "numpy")
            or class_slots.user_class(kind)  # the program's own (a cached method, a model)
            or self.source_of(receiver) is None
        ):
            return
        self.note_state_change((kind,), name)

    def _check_replayable_receiver(self, fn: Any, name: str) -> None:
        """A replayed call on an object this run made (``warnings.catch_warnings()``'s
        ``__exit__``, a lock the function created) would run on the monitoring run's
        object, whose state is from that run: refuse the record instead."""
        receiver = getattr(fn, "__self__", None)
        if id(receiver) in self.made_objects and self.source_of(receiver) is None:
            raise Unsupported(
                breaks.UNSUPPORTED_CONSTRUCT,
                f"{name} is called on a {type(receiver).__name__} the function created: "
                "a replay would call it on the object of the monitoring run",
            )

    def _warnings_block(self, fn: Any, args: tuple) -> bool:
        """At the exit of ``with warnings.catch_warnings():`` whose body only changed the
        filters: replace the body's filter calls by one replay of the whole block."""
        receiver = getattr(fn, "__self__", None)
        if (
            type(receiver) is not warnings.catch_warnings
            or getattr(fn, "__name__", "") != "__exit__"
            or args != (None, None, None)
            or getattr(receiver, "_record", True)
        ):
            return False
        made = self.made_objects.get(id(receiver))
        if made is None:
            return False
        _, made_args, made_kwargs, start = made
        inner = self.tape.callouts[start:]
        filters = {id(f): name for name, f in warnings_blocks.FILTER_FUNCTIONS.items()}
        if made_args or not all(is_literal(v) for v in made_kwargs.values()):
            return False
        if not all(c.deferred and id(c.function) in filters for c in inner):
            return False  # something else happened inside: replayed on its own terms
        del self.tape.callouts[start:]
        for mutation in self.mutations:  # made inside the block: before what follows it
            mutation.position = min(mutation.position, start + 1)
        calls = tuple((filters[id(c.function)], tuple(c.args), dict(c.kwargs)) for c in inner)
        self.tape.record_callout(
            warnings_blocks.replay_warnings_block,
            "warnings.catch_warnings",
            (tuple(sorted(made_kwargs.items())), calls),
            {},
            None,
            breaks.PYTHON_SIDE_EFFECT,
            effectful=True,
            guard_result=False,
        )
        return True

    def _callout(self, state, fn, args, kwargs, annotation, result) -> Callable:
        name = annotation_table.qualified_name(fn)
        self.paused = True
        self.mode.paused = True

        # Symbolic arguments are passed on to the replayed call as expressions.
        call_syms, state.call_syms = state.call_syms, None
        arg_syms = argument_syms(call_syms, len(args) + len(kwargs))
        # Containers the function made (``random.shuffle(idx)``, ``print(rows)``): copied
        # as they are before the call runs (monitor/changed_arguments.py).
        handed = changed_arguments.before_call(self, args, kwargs)
        shows_only = _only_reads_its_arguments(fn)
        cached = cached_calls.is_cached_program_function(fn)
        inputs = None if shows_only else _graph_input_versions(self.tape)

        changed = None  # what the call changed that the run read before it

        def note_changes() -> None:
            """Called while paused: the version and state queries are fullgraph's own."""
            nonlocal changed
            changed = _changed_input(inputs)
            if changed is None and annotation.category is breaks.AUTOGRAD_STATE_CALL:
                read = self.read_before(autograd_calls.state_changed_by(fn, args))
                changed = read.expr() if read is not None else None

        def after() -> None:
            note_changes()
            self.paused = False
            self.mode.paused = False
            record(result())

        def on_raise(error: BaseException) -> bool:
            """The call raised (and the program may catch it, ``try: ... except``): the
            mock makes the call and checks it raised the same; False when the exception
            can't be checked that way (the run is then not recordable)."""
            if not raised_is_checkable(error) or cached:
                return False  # a cached function that raised runs on every call, unobserved
            self.paused = self.mode.paused = True
            try:
                note_changes()
            finally:
                self.paused = self.mode.paused = False
            record(Raised(error))
            return True

        def record(value: Any) -> None:
            if not shows_only:
                # random.shuffle(xs), an unknown C call: it may have changed a container
                # from outside, so what the program reads from it next is not guarded
                # (the read marks the run as not recordable instead).
                for item in (*args, *kwargs.values()):
                    if isinstance(item, MUTABLE_CONTAINERS) and self.source_of(item) is not None:
                        self.written_containers.add(id(item))
            effectful = annotation.category in (
                breaks.PYTHON_SIDE_EFFECT,
                breaks.AUTOGRAD_STATE_CALL,
            )
            try:
                if not shows_only:  # which lists it changed are read back after it
                    changed_arguments.settle(self, handed, fn, name)
                if self._warnings_block(fn, args):
                    return
                self._check_replayable_receiver(fn, name)
                _check_reads_no_interpreter_state(name, kwargs)
                # A print shows its containers as they were then; a shuffle is handed the
                # list as it was before it (the program's own is made as the run left it).
                shown = changed_arguments.as_before(handed, args, copies=shows_only)
                values = tuple(kwargs.values())
                named = changed_arguments.as_before(handed, values, len(args), shows_only)
                call = (fn, shown, dict(zip(kwargs, named)), None)
                if fn is warnings.warn:
                    call = self._located_warning(shown, call[2]) or call
                elif cached:  # the replay must hit the cache (cached_calls.py)
                    call = cached_calls.through_cache(fn, shown, call[2])
                else:  # a log call, at the user's line
                    frame = self.frames[-1].frame if self.frames else None
                    call = logging_calls.located(fn, shown, call[2], frame) or call
                callout = self.tape.record_callout(
                    call[0],
                    name,
                    tuple(call[1]),
                    dict(call[2]),
                    value,
                    annotation.category,
                    effectful=effectful,
                    # A read's None decides as much as any other value (``.get(k)``).
                    guard_result=value is not None or not effectful or cached,
                    reads_a_setting=name in annotation_table.SETTING_READS or _marked_constant(fn),
                )
                callout.changes_state = not annotation.pure
                callout.remade_on_rerun = annotation is training_switch.SWITCH
                if not annotation.pure and not shows_only:
                    self._note_receiver_changed(fn, args, name)
                # What the call left in those lists decides what follows: read, mid-guarded.
                changed_arguments.read_after(self, handed, callout, annotation.category)
                changed_arguments.note_returned(self, value, name)
            except Unsupported as error:
                self.tape.unsupported = error
                self.unsupported.append(self.locate(name, error.category, error.detail))
                return
            syms, moved = arg_syms, call[3]
            if moved is not None:  # the call was rewritten: its symbols go where its arguments went
                for position, sym in syms.items():
                    if moved.get(position) is None:
                        self.concretize(sym)
                syms = {moved[i]: sym for i, sym in syms.items() if moved.get(i) is not None}
            callout.arg_syms = syms
            callout.changed_input = changed

        after.on_raise = on_raise
        return after


def _graph_input_versions(tape: Any) -> list:
    """(tensor, version, what it is) of each tensor from outside the graphs so far read:
    from outside the call, or a callout's result (``p.requires_grad_()`` returns ``p``)."""
    found = []
    for tensor in tape.keepalive:
        origin = tape.producer.get(id(tensor)) if isinstance(tensor, torch.Tensor) else None
        if isinstance(origin, ExternalOrigin):
            found.append((tensor, tensor_version(tensor), origin.source.expr()))
        elif isinstance(origin, CalloutOrigin):
            found.append((tensor, tensor_version(tensor), f"the result of callout {origin.index}"))
    return found


def _changed_input(inputs: list | None) -> str | None:
    """The first of those tensors the call updated in place (what it is)."""
    for tensor, version, what in inputs or ():
        if version is not None and tensor_version(tensor) != version:
            return what
    return None


# Calls that show the exception being handled (or the call stack): a replay makes
# them from the mock, where no exception is being handled and the stack is another.
_READS_HANDLED_EXCEPTION = frozenset(
    {
        "traceback.print_exc",
        "traceback.format_exc",
        "traceback.print_stack",
        "traceback.format_stack",
        "traceback.extract_stack",
        "sys.exc_info",
        "sys.exception",
        "logging.exception",
        "logging.Logger.exception",
        "logging.LoggerAdapter.exception",
    }
)


def _check_reads_no_interpreter_state(name: str, kwargs: dict) -> None:
    """``log.exception(...)`` or ``traceback.print_exc()`` in an ``except`` block, or a
    log call with ``exc_info=True`` / ``stack_info=True``: a replay would print
    ``NoneType: None`` or the mock's stack.  Refuse the record instead."""
    shows = name in _READS_HANDLED_EXCEPTION or (
        name.startswith("logging.") and (kwargs.get("exc_info") or kwargs.get("stack_info"))
    )
    if shows:
        raise Unsupported(
            breaks.UNSUPPORTED_CONSTRUCT,
            f"{name} shows the exception being handled or the call stack: a replay has neither",
        )


def _marked_constant(fn: Any) -> bool:
    """A function its library declares constant while compiling: transformers marks its
    availability and version probes (``is_torch_distributed_available()``, cached with
    ``lru_cache``) ``_dynamo_marked_constant``.  Still replayed and its result checked,
    but in front of the graph, like a setting read: one graph instead of a split."""
    wrapped = inspect.getattr_static(fn, "__wrapped__", None)
    return any(
        inspect.getattr_static(f, "_dynamo_marked_constant", False) is True
        for f in (fn, wrapped)
        if f is not None
    )


def raised_is_checkable(error: BaseException) -> bool:
    """Whether a mid-guard on the exception's type, ``args`` and fields decides
    everything the program can read of it: literal ``args`` (the message of a builtin
    exception comes from them), literal fields (``OSError.filename``, what its
    ``__dict__`` holds: ``torch.AcceleratorError.error_code``) and no cause chained to
    it.  Others, and ``BaseException``s such as ``KeyboardInterrupt``, keep the run
    unrecordable."""
    return (
        isinstance(error, Exception)
        and is_literal(error.args)
        and is_literal(exception_fields(error))
        and error.__cause__ is None
    )


class Injected:
    """Stands in for a callable whose result is already known."""

    def __init__(self, value: Any):
        if type(value) is cached_calls.CacheMissed:  # the replay's cached call ran the function
            value = value.value
        self.value = value

    def __call__(self, *args, **kwargs):
        if type(self.value) is Raised:
            raise self.value.error  # the call raised in the replay that missed
        return self.value


def argument_syms(call_syms: list | None, count: int) -> dict[int, Sym]:
    """Symbolic arguments of a call by position (the shadow slots of its last ``count`` entries)."""
    if not call_syms:
        return {}
    tail = call_syms[len(call_syms) - count :] if count else []
    return {i: sym for i, sym in enumerate(tail) if sym is not None}
