"""``explain``: one monitoring run turned into a report, with nothing cached."""

from __future__ import annotations

from collections.abc import Callable

import torch

from fullgraph.runtime import cpython
from fullgraph.runtime.monitor.driver import Monitor
from fullgraph.runtime.monitor.run import MonitorRun
from fullgraph.runtime.record.records import RecordError, build_record
from fullgraph.runtime.report import Report, fill_report, make_report


def explain_call(fn: Callable, args: tuple, kwargs: dict) -> Report:
    cpython.check_supported()
    module = fn if isinstance(fn, torch.nn.Module) else None
    root = type(fn).forward if module is not None else fn
    run = MonitorRun(root, args, kwargs, module)
    monitor = Monitor(run)
    try:
        result = monitor.execute(lambda: fn(*args, **kwargs))
    except Exception as error:  # noqa: BLE001 - the user's program raised: that is a result, not a crash
        return make_report(fn, run, error)
    report = make_report(fn, run, None)
    if monitor.tool_error is not None:
        report.notes.append(f"internal error in fullgraph's monitor: {monitor.tool_error!r}")
        return report
    try:
        record = build_record(run, result, None, len(args), tuple(kwargs))
    except RecordError as error:
        report.notes.append(f"not compiled: {error.detail}")
        _add_segment_graphs(report, run)
        return report
    if not record.reusable:
        report.notes.append(f"not reusable: {record.not_reusable_reason}")
    fill_report(report, [record])
    return report


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
