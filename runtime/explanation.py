"""``explain``: one monitoring run turned into a report, with nothing cached."""

from __future__ import annotations

from collections.abc import Callable

import torch

from fullgraph.runtime import cpython
from fullgraph.runtime.monitor import attribute_hooks, branch_exploration
from fullgraph.runtime.monitor.driver import Monitor
from fullgraph.runtime.monitor.run import MonitorRun
from fullgraph.runtime.record.records import RecordError, build_record
from fullgraph.runtime.report import Report, fill_report, make_report


def explain_call(fn: Callable, args: tuple, kwargs: dict) -> Report:
    report, kept_out = _explain_once(fn, args, kwargs, sized_by_data_in_graph=True)
    if kept_out:
        # Python read a size nonzero or x[mask] decided: as the compiled function's next
        # run does, run once more with those ops between graphs, and report that run
        # (the program runs twice: its effects are made twice).
        why = report.notes[0] if report.notes else ""
        report, _ = _explain_once(fn, args, kwargs, sized_by_data_in_graph=False)
        report.notes.insert(0, f"monitored twice, the first run {why}")
    return report


def _explain_once(
    fn: Callable, args: tuple, kwargs: dict, sized_by_data_in_graph: bool
) -> tuple[Report, bool]:
    """One monitoring run's report, and whether it kept data-sized ops out for the next."""
    cpython.check_supported()
    # The program's attribute hooks run for the program only (monitor/attribute_hooks.py).
    with attribute_hooks.set_aside() as hooks:
        return _explain_run(fn, args, kwargs, sized_by_data_in_graph, hooks)


def _explain_run(
    fn: Callable, args: tuple, kwargs: dict, sized_by_data_in_graph: bool, hooks
) -> tuple[Report, bool]:
    module = fn if isinstance(fn, torch.nn.Module) else None
    root = type(fn).forward if module is not None else fn
    run = MonitorRun(
        root, args, kwargs, module, sized_by_data_in_graph=sized_by_data_in_graph, hooks=hooks
    )
    monitor = Monitor(run)
    try:
        result = monitor.execute(lambda: fn(*args, **kwargs))
    except Exception as error:  # noqa: BLE001 - the user's program raised: that is a result, not a crash
        return make_report(fn, run, error), False
    result = branch_exploration.result_to_record(monitor, run, lambda: fn(*args, **kwargs), result)
    report = make_report(fn, run, None)
    kept_out = run.keeps_sized_by_data_out
    if monitor.tool_error is not None:
        report.notes.append(f"internal error in fullgraph's monitor: {monitor.tool_error!r}")
        return report, kept_out
    try:
        record = build_record(run, result, None, len(args), tuple(kwargs))
    except RecordError as error:
        report.notes.append(f"not compiled: {error.detail}")
        _add_segment_graphs(report, run)
        return report, kept_out
    if not record.reusable:
        report.notes.append(f"not reusable: {record.not_reusable_reason}")
    fill_report(report, [record])
    return report, kept_out


def _add_segment_graphs(report: Report, run: MonitorRun) -> None:
    from fullgraph.runtime.record.records import graph_modules

    for index, gm in enumerate(graph_modules(run)):
        report.graphs.append(
            {
                "index": index,
                "op_count": run.tape.segments[index].op_count,
                "op_counts": run.tape.segments[index].op_counts,
                "inputs": [],
                "outputs": [],
                "code": "",
            }
        )
