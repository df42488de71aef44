"""The compiled callable: record cache, hit/miss accounting, eager fallback.

A call looks up the function's records; the first whose guard passes is
replayed by its mock.  If none passes, a monitoring run executes the real
function (its result is what the caller gets), builds a new record and
compiles its graphs.  A function that keeps missing falls back to eager after
``recompile_limit`` records, and the report says why.
"""

from __future__ import annotations

import dataclasses
import functools
import types
from collections.abc import Callable
from typing import Any

import torch

from fullgraph.runtime import breaks, cpython, eager_check, source_peek
from fullgraph.runtime.backends import dynamic_variant, resolve
from fullgraph.runtime.eager_check import EagerTrial, timed
from fullgraph.runtime.monitor import attribute_hooks, autograd_calls, branch_exploration
from fullgraph.runtime.monitor.attribute_hooks import ProgramHooks
from fullgraph.runtime.monitor.driver import Monitor
from fullgraph.runtime.monitor.run import MonitorRun
from fullgraph.runtime.record import native_guards
from fullgraph.runtime.record.mock_support import EffectRaised, Missed, restore_rng, rng_state
from fullgraph.runtime.record.records import Record, RecordError, build_record
from fullgraph.runtime.report import Report, fill_report, make_report
from fullgraph.runtime.torch_internals import (
    control_flow_errors,
    foreign_mode,
    restore_torch_state,
    torch_state,
)

_CONTROL_FLOW_ERRORS = control_flow_errors()

# Monitoring runs in a row that made no record (each for a reason that may pass: an
# aliased input, state a call changed) before the function stops being monitored.
UNRECORDED_LIMIT = 4
# Monitoring runs whose data-dependent branches did not merge before no more are tried
# (each try runs every path of the function: monitor/branch_exploration.py).
MERGE_TRIES = 2


@dataclasses.dataclass
class Stats:
    monitor_runs: int = 0
    hits: int = 0
    misses: int = 0
    records: int = 0
    fallbacks: int = 0  # calls that ran eagerly (fell back)
    fallback_reason: str | None = None
    unrecorded: int = 0  # monitoring runs whose state could not become a record
    unrecorded_reason: str | None = None
    # Replays that raised and were run again by the program itself (it raises at its own
    # line, or it did not raise there: then the replay was wrong to, and this counts it).
    rerun_after_error: int = 0
    last_replay_error: str | None = None
    eager_trial_calls: int = 0  # calls the eager-or-record trial ran eagerly (eager_check.py)
    # Why no more monitoring runs are made although records exist: they still replay
    # what their guards accept, other calls run eagerly (fallbacks).
    monitoring_stopped: str | None = None
    # Why the latest record the trial judged slower than eager runs eagerly (the calls
    # its guard accepts run the plain function; the function's other records replay).
    slower_than_eager: str | None = None
    # Why the latest call that ran eagerly for its own sake did (a torch mode no record
    # captures: a TorchFunctionMode, a dispatch mode such as FlopCounterMode).
    eager_call_reason: str | None = None


class CompiledFunction:
    """What ``fullgraph.runtime.compile`` returns."""

    # Called inside another compiled function's monitoring run, it is stepped into as
    # the code it compiles (monitor/user_code.py: compiled_inner_target).
    inlined_when_monitored = True

    def __init__(
        self,
        target: Callable,
        backend="inductor",
        recompile_limit: int = 8,
        eager_check: bool = True,
        merge_branches: bool = True,
    ):
        cpython.check_supported()
        native_guards.prepare()
        self.backend_arg = backend
        self.backend_name, self.backend = resolve(backend)
        self.dynamic_backend = dynamic_variant(self.backend_name, self.backend)
        self.module = target if isinstance(target, torch.nn.Module) else None
        self.fn = target
        self.recompile_limit = recompile_limit
        self.records: list[Record] = []
        self.varying: set = set()  # sources of scalars seen to change: lifted, not guarded
        # Ops sized by data (nonzero) stay in the graph until a run finds Python reading
        # such a size (capture/data_dependent.py): then they are callouts for good.
        self.sized_by_data_in_graph = True
        self.dynamic: dict = {}  # sources of tensors whose sizes changed -> dims
        # Set once a record with tensor-returning callouts (nonzero, x[mask]) missed: the
        # sizes of those results are followed as symbols from then on.
        self.follow_sizes = False
        self.stats = Stats()
        self.last_report: Report | None = None
        # Whether a record is faster than eager is measured once (see eager_check.py).
        self.eager_check = eager_check
        self.trial: EagerTrial | None = None
        self.last_hit: Record | None = None
        # Set once a run that could not become a record changed the program's own state:
        # the next run gets one more try (see _stop_monitoring), never a second one.
        self.retried_after_setup = False
        self.unrecorded_in_a_row = 0  # monitoring runs since the last record that made none
        # Runs whose data-dependent branches did not merge (no more tries after a few).
        self.merge_failures = 0 if merge_branches else MERGE_TRIES
        self.merge_branches = merge_branches
        if isinstance(target, autograd_calls.distributed_wrappers()):
            # Its forward is torch's own bookkeeping around the model's: replaying the
            # model's graph alone would skip the gradient all-reduce.  Run it as it is.
            self.stats.fallback_reason = (
                f"{type(target).__name__} is not compiled as a whole: its forward does "
                "distributed bookkeeping outside any graph on every call; compile the "
                "model it wraps instead (wrapper.module.forward = "
                "fullgraph.runtime.compile(wrapper.module.forward))"
            )
        functools.update_wrapper(
            self, target.forward if self.module is not None else target, updated=()
        )
        self._initialized = True  # from now on, other attributes are the module's

    def __call__(self, *args, **kwargs):
        if self.stats.fallback_reason is not None:
            self.stats.fallbacks += 1
            return self.fn(*args, **kwargs)
        mode = foreign_mode()  # torch.device blocks are fine: records check them
        if mode is not None:
            self.stats.fallbacks += 1
            self.stats.eager_call_reason = f"called under {mode}, which no record captures"
            return self.fn(*args, **kwargs)
        if self.trial is None:
            return self._replay_or_monitor(args, kwargs)
        return self._trial_call(self.trial, args, kwargs)

    def _trial_call(self, trial: EagerTrial, args: tuple, kwargs: dict):
        """A call during the eager-or-record trial: timed, eagerly or as a replay."""
        values = (*args, *kwargs.values())
        if trial.wants_eager:
            record, root_fn = trial.record, self._root_function()
            if record.guard(args, kwargs, self.module, root_fn) is not None:
                self.stats.eager_trial_calls += 1
                result, seconds = timed(lambda: self.fn(*args, **kwargs), values)
                trial.eager.append(seconds)
                self._end_trial_if_done(trial)
                return result
            return self._replay_or_monitor(args, kwargs)
        self.last_hit = None
        result, seconds = timed(lambda: self._replay_or_monitor(args, kwargs), values)
        if self.last_hit is trial.record:
            trial.replay.append(seconds)
            self._end_trial_if_done(trial)
        return result

    def _end_trial_if_done(self, trial: EagerTrial) -> None:
        if not trial.done:
            return
        self.trial = None
        reason = trial.verdict()
        if reason is not None:
            trial.record.slower_than_eager = reason
            self.stats.slower_than_eager = reason
            if self.last_report is not None:
                self.last_report.notes.append(reason)

    def _replay_or_monitor(self, args: tuple, kwargs: dict):
        root_fn = self._root_function()
        made: dict = {}  # callout results of a replay that missed after making them
        made_by = None
        for position, record in enumerate(self.records):
            if made and not record.shares_callouts(made_by, max(made) + 1):
                continue  # its replay would repeat those effects
            if record.slower_than_eager is not None:
                if not made and record.guard(args, kwargs, self.module, root_fn) is not None:
                    self.stats.fallbacks += 1  # eager is faster for the calls it accepts
                    return self.fn(*args, **kwargs)
                continue
            made_now: dict = {}
            rng = rng_state() if record.draws_random else None
            state = torch_state()
            rerun = None
            try:
                result = record.replay(args, kwargs, self.module, root_fn, made, made_now)
            except Exception as error:
                # A graph that raised inside its no_grad / autocast regions left them on.
                restore_torch_state(state)
                if isinstance(error, EffectRaised):
                    raise error.error from None  # made as eager made it: not run again
                if not record.rerun_safe or isinstance(error, _CONTROL_FLOW_ERRORS):
                    raise  # (checkpoint's recompute stopping early: the program's own)
                if rng is not None:  # the rerun draws the graph's random numbers again
                    restore_rng(rng)
                self.stats.rerun_after_error += 1
                self.stats.last_replay_error = f"{type(error).__name__}: {error}"[:300]
                # A replayed call (e.g. int(t) on NaN) raised.  Run the program itself,
                # handing it the results of the calls the replay already made (their
                # effects are done), so it raises at the user's own line, with every
                # effect before it applied once.
                rerun = {**made, **made_now}
            if rerun is not None:
                # Outside the ``except``: the program's own exception gets no context.
                self.stats.misses += 1
                return self._monitor(args, kwargs, injected=rerun)
            if isinstance(result, Missed):
                if record.resume_on_miss and len(made_now) > len(made):
                    # Effects already happened in this replay (it reused those of the
                    # replays before it and made more): other records and the monitoring
                    # run get their results instead of running them again.
                    made, made_by = dict(made_now), record
                continue
            self.stats.hits += 1
            record.hits += 1
            self.last_hit = record
            if record.hits == eager_check.WARM_HITS and self.eager_check:
                self.trial = EagerTrial(record)  # hits only grow: one trial per record
            if position:  # most recently used first
                self.records.insert(0, self.records.pop(position))
            return result
        self.stats.misses += 1
        self._note_changes(args, kwargs, root_fn)
        if made:
            return self._monitor(args, kwargs, injected=made)
        if self.stats.monitoring_stopped is not None:
            self.stats.fallbacks += 1
            return self.fn(*args, **kwargs)
        if len(self.records) >= self.recompile_limit:
            # No more monitoring runs; the records still replay the calls they accept
            # (a policy whose sampled path repeats), the others run eagerly.
            why = self.records[0].failed_check(args, kwargs, self.module, root_fn)
            self.stats.monitoring_stopped = (
                f"{breaks.EAGER_FALLBACK.code}: recompile limit reached: {len(self.records)} "
                "records, none of which matched the call"
                + (f"; the latest failed on: {why}" if why else "")
            )
            self.stats.fallbacks += 1
            return self.fn(*args, **kwargs)
        return self._monitor(args, kwargs)

    def __reduce__(self):
        """A copy or a pickle is a new compiled callable of (a copy of) the target, with
        no records: they hold compiled code and native guard trees, which belong to this
        process and to the objects this one was called with (as ``torch.compile``'s
        module copies do)."""
        return (CompiledFunction, self._constructor_arguments())

    def _constructor_arguments(self) -> tuple:
        return (
            self.fn,
            self.backend_arg,
            self.recompile_limit,
            self.eager_check,
            self.merge_branches,
        )

    def __getattr__(self, name: str):
        """A compiled module stands for the module: ``compiled.parameters()``,
        ``.state_dict()``, ``.eval()``, ``.lin`` reach it (as ``torch.compile``'s module
        does), and a method that returns the module (``.to(...)``, ``.train()``)
        returns this compiled callable, so ``model = model.to(device)`` keeps it."""
        module = self.__dict__.get("module")
        if module is None or name.startswith("__"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        value = getattr(module, name)
        if isinstance(value, types.MethodType) and value.__self__ is module:
            return returning_self(value, module, self)
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        """A write through a compiled module (``model.temperature = 4.0``, ``model.lin =
        nn.Identity()``, ``model.training = False``) is the module's, as reads are; the
        compiled callable's own state and dunder names stay its own."""
        if self._forwards(name):
            setattr(self.__dict__["module"], name, value)
        else:
            object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        if self._forwards(name):
            delattr(self.__dict__["module"], name)
        else:
            object.__delattr__(self, name)

    def _forwards(self, name: str) -> bool:
        return (
            self.__dict__.get("_initialized", False)
            and self.__dict__.get("module") is not None
            and name not in self.__dict__
            and not name.startswith("__")
            and not hasattr(CompiledFunction, name)  # (not its class: a module class too)
        )

    def __get__(self, instance, owner=None):
        """Used as a method decorator: bind like a function does."""
        if instance is None:
            return self
        return types.MethodType(self, instance)

    def _note_changes(self, args: tuple, kwargs: dict, root_fn) -> None:
        """What changed since the latest record: scalars become symbolic (lifted into the
        graph) and tensor sizes dynamic (the next record is compiled size-generic)."""
        for record in self.records[:1]:
            if record.tensor_callouts:
                self.follow_sizes = True
            scope = {
                **record.guard_namespace,
                "A": args,
                "K": kwargs,
                "M": self.module,
                "F": root_fn,
            }
            for source, value in record.scalar_reads + record.tensor_shapes:
                try:  # (without running the program's code: source_peek.py)
                    now = source_peek.peek(source, scope)
                except source_peek.Unreadable:
                    continue  # the path is gone, or reading it runs code: nothing to learn
                if isinstance(now, torch.Tensor):
                    if not isinstance(value, tuple):
                        continue  # it was not a tensor when recorded: nothing to learn
                    if now.dim() == len(value) and tuple(now.shape) != value:
                        changed = {d for d, (a, b) in enumerate(zip(now.shape, value)) if a != b}
                        self.dynamic.setdefault(source, set()).update(changed)
                elif type(now) is type(value) and now != value:
                    self.varying.add(source)

    def _root_function(self):
        if self.module is not None:
            return type(self.module).forward
        return self.fn

    def _monitor(self, args: tuple, kwargs: dict, injected: dict | None = None):
        run, result = None, None
        # The program's __getattribute__ / __getattr__ run for the program only, never
        # for fullgraph's reads of its objects (monitor/attribute_hooks.py).
        with attribute_hooks.set_aside() as hooks:
            try:
                run = self._start_run(args, kwargs, injected, hooks)
                result = self._run_and_record(run, args, kwargs)
            finally:
                if run is not None and run.shapes is not None:
                    result = run.shapes.close(result, run.mutations, run.objects_made())
                if run is not None and run.keeps_sized_by_data_out:
                    self.sized_by_data_in_graph = False
                if run is not None:
                    run.release()
        return result

    def _start_run(
        self, args: tuple, kwargs: dict, injected: dict | None, hooks: ProgramHooks
    ) -> MonitorRun:
        return MonitorRun(
            self._root_function(),
            args,
            kwargs,
            self.module,
            frozenset(self.varying),
            injected,
            dynamic=self.dynamic,
            follow_sizes=self.follow_sizes or bool(self.dynamic),
            sized_by_data_in_graph=self.sized_by_data_in_graph,
            hooks=hooks,
        )

    def _run_and_record(self, run: MonitorRun, args: tuple, kwargs: dict):
        monitor = Monitor(run)
        self.stats.monitor_runs += 1
        try:
            result = monitor.execute(lambda: self.fn(*args, **kwargs))
        except Exception as error:  # the program's own exception: it reaches the caller
            report = make_report(self.fn, run, None)
            self.last_report = report
            self._not_recorded(
                f"the call raised {type(error).__name__} (a call that raises is not "
                "recorded; the next call is monitored again)",
                report,
                run,
            )
            raise
        if self.merge_failures < MERGE_TRIES:
            recorded = branch_exploration.result_to_record(
                monitor,
                run,
                lambda: self.fn(*args, **kwargs),
                result,
                python_branches=self.backend_name == "eager",
            )
            if recorded is result and run.merge_note is not None:  # explored, not merged
                self.merge_failures += 1
        else:
            recorded = result
        report = make_report(self.fn, run, None)
        self.last_report = report
        if monitor.tool_error is not None:
            self.stats.fallback_reason = (
                f"internal error in fullgraph's monitor: {monitor.tool_error!r}"
            )
            return result
        try:
            record = self._build_record(run, recorded, result, args, kwargs)
        except RecordError as error:
            if error.transient:
                self._not_recorded(error.detail, report, run)
                return result
            self._stop_monitoring(f"not compiled: {error.detail}", report, run)
            return result
        except Exception as error:  # noqa: BLE001 - a bug in fullgraph, never the user's
            self.stats.fallback_reason = f"internal error in fullgraph while recording: {error!r}"
            report.notes.append(self.stats.fallback_reason)
            return result
        if run.unmerged_tape is not None and run.tape is run.unmerged_tape:
            report = self.last_report = make_report(self.fn, run, None)  # as recorded
        if not record.reusable:
            self._stop_monitoring(
                f"not reusable ({breaks.NOT_REUSABLE.code}): {record.not_reusable_reason}",
                report,
                run,
            )
            return result
        self.records.insert(0, record)
        self.unrecorded_in_a_row = 0
        self.stats.records = len(self.records)
        fill_report(report, [record])
        return result

    def _build_record(self, run: MonitorRun, recorded, result, args: tuple, kwargs: dict):
        """The record of the run; where its merged branches fail to become one (a
        backend that rejects the torch.cond), the record of the run as it ran."""

        def build(value):
            return build_record(
                run, value, self.backend, len(args), tuple(kwargs), self.dynamic_backend
            )

        if run.unmerged_tape is None:
            return build(result)
        try:
            return build(recorded)
        except Exception as error:  # noqa: BLE001 - the unmerged record is the program's answer too
            run.tape = run.main_tape = run.unmerged_tape
            run.merged_reads = []
            run.merge_note = f"data-dependent branches not merged: recording failed ({error!r})"[
                :400
            ]
            self.merge_failures += 1
            return build(result)

    def _not_recorded(self, detail: str, report: Report, run: MonitorRun) -> None:
        """Only this call could not become a record (its inputs alias, it raised): the
        next call is monitored again, up to a limit.  Monitoring costs tens of eager
        calls, so a function no call of which becomes a record (a hook registered on
        every call, a call that always raises) then runs eagerly."""
        self.stats.unrecorded += 1
        self.stats.unrecorded_reason = detail
        report.notes.append(f"not recorded: {detail}")
        self.unrecorded_in_a_row += 1
        if self.unrecorded_in_a_row >= UNRECORDED_LIMIT:
            self._stop_monitoring(
                f"not compiled: {self.unrecorded_in_a_row} calls in a row could not "
                f"be recorded; the latest: {detail}",
                report,
                run,
                may_retry=False,
            )

    def _stop_monitoring(
        self, reason: str, report: Report, run: MonitorRun, may_retry: bool = True
    ) -> None:
        """A run that can't become a record: no more monitoring runs.  Without records
        the function runs eagerly from now on; with some, they still replay the calls
        their guards accept (a model whose config switch reaches an unsupported
        construct keeps its records for the other setting) and only the rest run eagerly.

        Except once: a run that changed the program's own objects may have been a
        one-time setup, after which the calls record fine.  Transformers installs its
        output-capturing hooks (``register_forward_hook``, whose handle no replay can
        make again) on the first call that asks for hidden states and marks the model
        as hooked; every later call, with or without hidden states, is recordable.  So
        such a run leaves the next call one more monitoring run; a second unrecordable
        run stops monitoring as above."""
        report.notes.append(reason)
        if may_retry and run.mutations and not self.retried_after_setup:
            self.retried_after_setup = True
            self.stats.unrecorded += 1
            self.stats.unrecorded_reason = reason
            return
        if self.records:
            self.stats.monitoring_stopped = reason
        else:
            self.stats.fallback_reason = reason

    def report(self) -> Report | None:
        if self.last_report is not None:
            fill_report(self.last_report, self.records)
        return self.last_report


def returning_self(method, module, compiled: CompiledFunction):
    @functools.wraps(method)
    def call(*args, **kwargs):
        result = method(*args, **kwargs)
        return compiled if result is module else result

    return call
