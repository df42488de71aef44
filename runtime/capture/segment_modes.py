"""The torch settings a segment's graph switches: grad mode and autocast regions.

A program may enter ``torch.no_grad()`` or a ``torch.autocast`` region in the
middle of the function.  The graph switches at the same op (``set_grad_enabled``
and ``_enter_autocast`` / ``_exit_autocast`` nodes, as Dynamo emits them), and
each segment ends in the settings the call started with.  Settings the function
leaves changed when it returns are noted here too: grad mode and anomaly
detection the mock sets after the last graph, and regions left open that no
replay can leave open (the run is not recorded).
"""

from __future__ import annotations

import torch

from fullgraph.runtime import breaks
from fullgraph.runtime.capture.segments import Segment, Unsupported
from fullgraph.runtime.torch_internals import (
    AUTOCAST_DEVICES,
    INFERENCE_MODE,
    autocast_state,
    enter_autocast_op,
    exit_autocast_op,
    set_grad_enabled_op,
)

# Process-wide autograd settings a function may leave changed when it returns
# (``torch.autograd.set_detect_anomaly(True)``): expression -> its value now.  The
# guard checks them at entry (so the exit state is what the record says) and the mock
# leaves them as the monitoring run left them.
ANOMALY_ENABLED = "torch.is_anomaly_enabled()"
ANOMALY_CHECK_NAN = "torch.is_anomaly_check_nan_enabled()"


def anomaly_state() -> dict[str, bool]:
    return {
        ANOMALY_ENABLED: torch.is_anomaly_enabled(),
        ANOMALY_CHECK_NAN: torch.is_anomaly_check_nan_enabled(),
    }


def sync_grad_mode(segment: Segment, entry_grad_mode: bool) -> None:
    """Before an op: the graph switches grad mode where the program did."""
    mode = torch.is_grad_enabled()
    current = segment.grad_mode if segment.grad_mode is not None else entry_grad_mode
    if mode != current:
        segment.graph.call_function(set_grad_enabled_op(), (mode,))
    segment.grad_mode = mode


def sync_autocast(segment: Segment, entry_autocast: tuple) -> None:
    """Before an op: a ``torch.autocast`` region the program entered or left is entered
    or left by the graph at the same op."""
    now = autocast_state()
    stack = segment.autocast_stack
    levels = [entry_autocast] + [state for _, state in stack]
    if now == levels[-1]:
        return
    if now in levels:  # the program left regions: close them, innermost first
        while levels[-1] != now:
            node, _ = stack.pop()
            levels.pop()
            segment.graph.call_function(exit_autocast_op(), (node,))
        return
    current = levels[-1]
    for device, before, after in zip(AUTOCAST_DEVICES, current, now):
        if before != after:  # a region opened (for each device type it changes)
            enabled, dtype = after
            node = segment.graph.call_function(
                enter_autocast_op(), (device, dtype, enabled, torch.is_autocast_cache_enabled())
            )
            stack.append((node, now))


def close(segment: Segment, entry_grad_mode: bool) -> None:
    """At the end: the segment's graph leaves the regions still open and goes back to
    the grad mode the call started with."""
    for node, _ in reversed(segment.autocast_stack):
        segment.graph.call_function(exit_autocast_op(), (node,))
    segment.autocast_stack.clear()
    if segment.grad_mode is not None and segment.grad_mode != entry_grad_mode:
        segment.graph.call_function(set_grad_enabled_op(), (entry_grad_mode,))


def exit_state(entry_state: dict, entry_autocast: tuple) -> tuple[bool, dict[str, bool]]:
    """The grad mode and anomaly settings the function returns with (eager leaves them
    so); an inference-mode or autocast region left open raises Unsupported."""
    inference = torch.is_inference_mode_enabled()
    if inference != entry_state[INFERENCE_MODE]:
        raise Unsupported(
            breaks.UNSUPPORTED_CONSTRUCT,
            f"the function returns with torch.inference_mode() {'on' if inference else 'off'} "
            f"(entered with __enter__() and not exited); a replay cannot leave it so",
        )
    if autocast_state() != entry_autocast:
        raise Unsupported(
            breaks.UNSUPPORTED_CONSTRUCT,
            "the function returns with autocast settings it changed (a torch.autocast "
            "region entered with __enter__() and not exited, or torch.set_autocast_enabled); "
            "a replay cannot leave them so",
        )
    return torch.is_grad_enabled(), anomaly_state()
