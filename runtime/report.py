"""The analysis report: what a monitoring run captured, as data.

``Report.to_json()`` follows the versioned schema in docs/report-schema.md;
``Report.format()`` renders the same facts as text for people.
"""

from __future__ import annotations

import dataclasses
import inspect
import platform
import traceback
from typing import TYPE_CHECKING, Any

import torch

from fullgraph.runtime import breaks as breaks_module

if TYPE_CHECKING:  # the report is built from them; they do not need it
    from fullgraph.runtime.monitor.run import MonitorRun
    from fullgraph.runtime.record.records import Record

SCHEMA_VERSION = 1


@dataclasses.dataclass
class Report:
    qualname: str
    file: str
    line: int
    status: str = "ok"  # "ok" | "user_exception"
    error: dict | None = None
    graphs: list[dict] = dataclasses.field(default_factory=list)
    breaks: list[breaks_module.GraphBreak] = dataclasses.field(default_factory=list)
    # Value reads that run as checks in front of the graph instead of splitting it.
    data_checks: list[breaks_module.GraphBreak] = dataclasses.field(default_factory=list)
    # Output effects of plain values (print, logging, warnings) made after the graph.
    deferred_effects: list[breaks_module.GraphBreak] = dataclasses.field(default_factory=list)
    guards: list[dict] = dataclasses.field(default_factory=list)
    mocks: list[dict] = dataclasses.field(default_factory=list)
    side_effects: list[dict] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)

    @property
    def graph_count(self) -> int:
        return len(self.graphs)

    @property
    def break_count(self) -> int:
        return len(self.breaks)

    def to_json(self) -> dict[str, Any]:
        from fullgraph.runtime import __version__

        return {
            "schema_version": SCHEMA_VERSION,
            "tool": {
                "name": "fullgraph",
                "version": __version__,
                "python": platform.python_version(),
                "torch": torch.__version__,
            },
            "function": {"qualname": self.qualname, "file": self.file, "line": self.line},
            "status": self.status,
            "error": self.error,
            "graph_count": self.graph_count,
            "break_count": self.break_count,
            "graphs": self.graphs,
            "breaks": [b.to_json() for b in self.breaks],
            "data_checks": [data_check_json(b) for b in self.data_checks],
            "deferred_effects": [deferred_effect_json(b) for b in self.deferred_effects],
            "guards": self.guards,
            "mocks": self.mocks,
            "side_effects": self.side_effects,
            "notes": self.notes,
        }

    def format(self) -> str:
        lines = [
            f"fullgraph report for {self.qualname} ({self.file}:{self.line})",
            f"status: {self.status}; graphs: {self.graph_count}; breaks: {self.break_count}",
        ]
        if self.error:
            lines.append(f"error: {self.error['type']}: {self.error['message']}")
        for b in self.breaks:
            lines.append(
                f"  {b.file}:{b.line}:{b.column + 1}: {b.category.code} "
                f"{b.category.title}: {b.function}"
            )
            lines.append(f"      hint: {b.category.hint}")
        kept_whole = [(b, "data check in front of the graph") for b in self.data_checks]
        kept_whole += [(b, "made after the graph") for b in self.deferred_effects]
        for b, what in kept_whole:
            lines.append(
                f"  {b.file}:{b.line}:{b.column + 1}: {b.category.code} {what} (no split): "
                f"{b.function}"
            )
        for note in self.notes:
            lines.append(f"note: {note}")
        for graph in self.graphs:
            lines.append(
                f"\n--- graph {graph['index']} ({graph['op_count']} ops; inputs: "
                f"{', '.join(graph['inputs']) or '-'}) ---\n{graph['code']}"
            )
        for guard in self.guards:
            lines.append(
                f"\n--- guard of record {guard['record']} ({guard['check_count']} checks, "
                f"{guard.get('native_checks', 0)} of them native) ---\n"
                f"{guard['source']}"
            )
        for mock in self.mocks:
            lines.append(f"\n--- mock of record {mock['record']} ---\n{mock['source']}")
        if self.side_effects:
            lines.append(
                "\nside effects replayed: " + "; ".join(s["description"] for s in self.side_effects)
            )
        return "\n".join(lines)


DATA_CHECK_EXPLANATION = (
    "The read's tensor is computed from the call's inputs by a few pure ops, so it runs "
    "in front of the graph (a small check graph recomputes the tensor) and the graph is "
    "not split. The record still applies only while the read gives the same value: "
    "another value means another record."
)


DEFERRED_EFFECT_EXPLANATION = (
    "The call prints, logs or warns with plain values only (strings, numbers, sizes), "
    "so it cannot see what the graph computes: the graph goes on past it, and the mock "
    "makes the call after the graph, every call, in program order with the other "
    "effects."
)


def data_check_json(check: breaks_module.GraphBreak) -> dict[str, Any]:
    """A value read hoisted in front of the graph, in the same shape as a break."""
    return _kept_whole(check, "Checked in front of the graph", DATA_CHECK_EXPLANATION)


def deferred_effect_json(effect: breaks_module.GraphBreak) -> dict[str, Any]:
    """An output effect made after the graph, in the same shape as a break."""
    return _kept_whole(effect, "Made after the graph", DEFERRED_EFFECT_EXPLANATION)


def _kept_whole(site: breaks_module.GraphBreak, what: str, why: str) -> dict[str, Any]:
    data = site.to_json()
    data["message"] = f"{what} (no split): {site.function}"
    data["explanation"] = why
    return data


def describe_function(fn: Any) -> tuple[str, str, int]:
    target = fn.forward if isinstance(fn, torch.nn.Module) else fn
    target = getattr(target, "__func__", target)
    qualname = getattr(target, "__qualname__", type(fn).__name__)
    try:
        file = inspect.getsourcefile(target) or "<unknown>"
        line = inspect.getsourcelines(target)[1]
    except (TypeError, OSError):
        file, line = "<unknown>", 0
    return qualname, file, line


def user_error(exc: BaseException) -> dict:
    return {
        "type": type(exc).__name__,
        "message": str(exc),
        "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
    }


def dedupe_breaks(found: list[breaks_module.GraphBreak]) -> list[breaks_module.GraphBreak]:
    """One break per distinct source location (nested frames repeat a site)."""
    seen, unique = set(), []
    for b in found:
        key = (b.file, b.line, b.column, b.category.code)
        if key not in seen:
            seen.add(key)
            unique.append(b)
    return unique


def make_report(fn, run: MonitorRun, error: BaseException | None) -> Report:
    """A monitoring run's report: where the function is, its breaks, data checks and
    deferred effects (graphs, guards and mocks come with a record: ``fill_report``)."""
    qualname, file, line = describe_function(fn)
    report = Report(qualname, file, line)
    if error is not None:
        report.status = "user_exception"
        report.error = user_error(error)
    splits, checks, deferred = run.tape.call_sites()
    report.breaks = dedupe_breaks(splits + run.unsupported)
    report.data_checks = dedupe_breaks(checks + run.merged_reads)
    report.deferred_effects = dedupe_breaks(deferred)
    if run.merge_note is not None:
        report.notes.append(run.merge_note)
    return report


def fill_report(report: Report, records: list[Record]) -> None:
    """The most recent record's graphs, guard, mock and side effects, into ``report``."""
    report.graphs, report.guards, report.mocks = [], [], []
    for index, record in enumerate(records):
        for gm in record.graphs:
            placeholders = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
            ops = [
                n for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module")
            ]
            if not ops and not placeholders:
                continue
            counts: dict[str, int] = {}
            for node in ops:
                name = (
                    node.target
                    if isinstance(node.target, str)
                    else getattr(node.target, "__name__", str(node.target))
                )
                counts[name] = counts.get(name, 0) + 1
            outputs = [str(a) for a in next(n for n in gm.graph.nodes if n.op == "output").args[0]]
            report.graphs.append(
                {
                    "index": len(report.graphs),
                    "op_count": len(ops),
                    "op_counts": counts,
                    "inputs": placeholders,
                    "outputs": outputs,
                    "code": gm.code.strip(),
                }
            )
        report.guards.append(
            {
                "record": index,
                "source": record.guard_source,
                "check_count": record.check_count,
                "native_checks": record.native_checks,
            }
        )
        report.mocks.append({"record": index, "source": record.mock_source})
        report.side_effects = [
            {"kind": "store", "target": s, "description": s} for s in record.side_effects
        ]
        break  # the report describes the most recent record
