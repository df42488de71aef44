"""The settrace driver: runs a function once with per-opcode observation.

A global trace function decides, per new frame, whether the monitor steps in
(user code) or lets the call run unobserved (torch, the standard library and
annotated code).  Observed frames get opcode events; each event first
finishes the previous instruction of that frame (its outputs are now on the
stack), then hands the next instruction to its registered handler.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable
from typing import Any

from fullgraph.runtime import cpython
from fullgraph.runtime.monitor import (
    attribute_hooks,
    function_reads,
    global_loads,
    imports,
    packed_syms,
    passed_syms,
    taint,
)
from fullgraph.runtime.monitor.opcodes import HANDLERS
from fullgraph.runtime.monitor.run import MonitorRun
from fullgraph.runtime.monitor.state import FrameState
from fullgraph.runtime.monitor.user_code import is_user_code

_ = global_loads, imports  # their handlers join HANDLERS (LOAD_GLOBAL, IMPORT_*)


class ToolError(RuntimeError):
    """A bug in fullgraph's monitor (as opposed to an exception in user code)."""


class Monitor:
    def __init__(self, run: MonitorRun):
        self.run = run
        self.tool_error: BaseException | None = None
        # Garbage-collector callbacks (a profiler's, hypothesis's) run wherever a
        # collection happens to start: they are not the program, so never observed.
        self.ignored_codes = _gc_callback_codes()

    def execute(self, call: Callable[[], Any], finish: bool = True) -> Any:
        """Run ``call()`` under observation and return its real result; ``finish``: judge
        what only the program's return shows (not for a path of branch_exploration,
        which the real run has judged)."""
        cpython.check_supported()
        hooks = self.run.hooks
        previous = sys.gettrace()
        cpython.start_tracing(self._on_call)
        try:
            # No 'is compiling' flag: the monitoring run is the real program, and library
            # code that asks (optimizers, transformers) must take its eager path.
            with self.run.mode:
                hooks.fullgraph = False  # the program runs its own attribute hooks
                try:
                    result = call()
                finally:
                    hooks.fullgraph = True
        finally:
            cpython.stop_tracing(previous)
            self.run.paused = False
        if finish:
            self.run.finish()
        return result

    def _on_call(self, frame, event, arg):
        if event != "call" or self.run.paused or self.tool_error is not None or self.run.stopped:
            return None
        if not is_user_code(frame.f_code) or frame.f_code in self.ignored_codes:
            return None
        if frame.f_globals.get("__name__", "").startswith("fullgraph."):
            return None  # fullgraph's own generated code (its dataclasses' __init__)
        hooks = self.run.hooks
        program_time, hooks.fullgraph = hooks.fullgraph, True
        try:
            state = FrameState(frame)
            hook = hooks.hook_of(frame)
            if hook is not None:  # the program runs its __getattribute__: did it change anything?
                state.hook, state.effects_at_entry = hook, attribute_hooks.effects(self.run)
            callee = cpython.frame_function(frame)
            if callee is not None:  # its code and defaults, where it has a path
                function_reads.read_function(self.run, callee)
            if not self.run.frames and frame.f_code is self.run.root_code:
                state.local_syms.update(self.run.root_local_syms(frame.f_code))
            elif not self.run.frames:  # the root is a library wrapper of this function
                state.local_syms.update(passed_syms.from_root(self.run, frame))
            else:
                self._take_passed_syms(frame, state, self.run.frames[-1])
            tracer = self._local_tracer(state)
            cpython.trace_opcodes(frame, tracer)
            self.run.frames.append(state)
            return tracer
        finally:
            hooks.fullgraph = program_time

    def _take_passed_syms(self, frame, state: FrameState, caller: FrameState) -> None:
        """The caller's symbolic operands this callee's parameters hold."""
        values, syms = caller.call_values, caller.call_syms
        if values is None or syms is None or not passed_syms.called_directly(frame, caller.frame):
            return
        caller.call_values = None  # one callee per call
        handed = list(zip(values, syms))
        found = passed_syms.bind(frame, handed)
        state.local_syms.update(found)
        taken = {id(sym) for sym in found.values()}
        taken |= packed_syms.bind_packed(self.run, frame, handed)
        if taken:
            caller.call_syms = [None if s is not None and id(s) in taken else s for s in syms]

    def _local_tracer(self, state: FrameState):
        run = self.run
        mode = run.mode
        hooks = run.hooks
        instructions = cpython.instructions(state.frame.f_code)

        def trace(frame, event, arg):
            if self.tool_error is not None or run.stopped:
                return None
            program_time, hooks.fullgraph = hooks.fullgraph, True
            try:
                return handle(frame, event, arg)
            finally:
                hooks.fullgraph = program_time

        def handle(frame, event, arg):
            if event == "opcode":
                mode.paused = True
                try:
                    pending = state.pending
                    if pending is not None:
                        state.pending = None
                        pending()
                    pending = state.taint_pending
                    if pending is not None:
                        state.taint_pending = None
                        pending()
                    ins = instructions[frame.f_lasti]
                    state.instruction = ins
                    if not run.paused:
                        state.taint_pending = taint.step(run, state, ins)
                        handler = HANDLERS.get(ins.opname)
                        if handler is not None:
                            state.pending = handler(run, state, ins)
                except Exception as error:  # noqa: BLE001 - a fullgraph bug must not break the user's program
                    error.__fullgraph_where__ = f"{frame.f_code.co_filename}:{frame.f_lineno}"
                    self.tool_error = error
                    run.paused = False
                finally:
                    mode.paused = run.paused
            elif event == "return":
                if state.pending is not None and run.paused:
                    run.paused = mode.paused = False
                state.pending = state.taint_pending = None
                if (
                    state.hook is not None
                    and attribute_hooks.effects(run) != state.effects_at_entry
                ):
                    hooks.effectful.add(state.hook)  # the program's hook changed something
                if run.frames and run.frames[-1] is state:
                    run.frames.pop()
                # frame -> f_trace (this closure) -> state -> frame is a cycle: the
                # finished frame and its locals would live until the cyclic collector
                # ran, where eager frees them on return (a weak reference tells).  The
                # tracer returned for a "return" event would become f_trace again.
                frame.f_trace = None
                return None
            elif event == "exception":
                on_exception = getattr(state.pending, "on_exception", None)
                if on_exception is not None and not run.paused:
                    try:  # the instruction itself raised (a missing key or attribute)
                        on_exception(arg[1])
                    except Exception as error:  # noqa: BLE001 - a fullgraph bug
                        self.tool_error = error
                if state.pending is not None and run.paused:
                    # a callout raised: its result never arrived.  The program may catch
                    # it; the record then makes the call and checks it raised the same.
                    run.paused = mode.paused = False
                    on_raise = getattr(state.pending, "on_raise", None)
                    try:
                        recorded = on_raise is not None and on_raise(arg[1])
                    except Exception as error:  # noqa: BLE001 - a fullgraph bug
                        self.tool_error, recorded = error, True
                    if not recorded:
                        run.callout_failed = True
                state.pending = state.taint_pending = None
                # The handler that catches it keeps the stack below its depth: the
                # symbols there (a local an inlined comprehension saved) stay theirs.
                # Those above were operands of what raised (``10 // n``,
                # ``x.view(n, -1)``): their values decided that it raised.
                handler = cpython.handler_entry(frame.f_code, frame.f_lasti)
                kept = handler[0] if handler is not None else 0
                for sym in state.shadow[kept:]:
                    if sym is not None:
                        run.concretize(sym)
                del state.shadow[kept:]
            # Not ``return trace``: a closure naming itself is a cycle that would keep
            # ``state`` (and its frame) alive after the return; f_trace is this function.
            return frame.f_trace

        return trace


def _gc_callback_codes() -> frozenset:
    codes = set()
    for callback in gc.callbacks:
        function = getattr(callback, "__func__", callback)
        code = getattr(function, "__code__", None)
        if code is not None:
            codes.add(code)
    return frozenset(codes)
