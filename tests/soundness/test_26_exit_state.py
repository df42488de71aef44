"""Class 26: global state the function leaves changed when it returns.

An evaluation script's ``predict`` that starts with ``torch.set_grad_enabled(False)``
leaves its caller in no-grad mode; ``torch.set_printoptions(precision=2)`` and
``torch.autograd.set_detect_anomaly(True)`` stay in force after the call too.  The
replay must leave the same state as eager: grad mode and anomaly detection as the
monitoring run left them (the graphs compute with the mode their ops ran in), print
options set again in program order (a print after them formats as eager's).  An
inference-mode or autocast region entered with ``__enter__()`` and never exited can't
be left open by a replay: the record is refused and the function runs eagerly.

Each call starts from a chosen state (the ``entry`` context: grad mode, anomaly
detection, torch's default print options); what the call leaves is saved in
``env.left``, which the default watch compares, and then put back, so a twin's
leftovers reach neither the other twin nor the rest of the session.
"""

from __future__ import annotations

import contextlib
from functools import partial

import torch
from harness import Call, Case, backends, run_case, vec
from harness import prog as shared_prog

prog = partial(shared_prog, name="exit26")


def left_state() -> dict:
    opts = torch._tensor_str.PRINT_OPTS
    return {
        "grad": torch.is_grad_enabled(),
        "anomaly": torch.is_anomaly_enabled(),
        "anomaly_check_nan": torch.is_anomaly_check_nan_enabled(),
        "print_options": (
            opts.precision,
            opts.threshold,
            opts.edgeitems,
            opts.linewidth,
            opts.sci_mode,
        ),
        "inference_mode": torch.is_inference_mode_enabled(),
        "autocast_cpu": torch.is_autocast_enabled("cpu"),
    }


def entry(grad: bool = True, anomaly: bool = False):
    """A Call context: the call starts in this state; what it leaves goes to env.left."""

    @contextlib.contextmanager
    def context(env):
        torch.set_grad_enabled(grad)
        torch.set_anomaly_enabled(anomaly)
        torch.set_printoptions(profile="default")
        try:
            yield
        finally:
            env.left = left_state()
            held = getattr(env.ns, "held", None)  # a region the program entered and left open
            if held is not None and (
                torch.is_inference_mode_enabled() or torch.is_autocast_enabled("cpu")
            ):
                held.__exit__(None, None, None)
            torch.set_anomaly_enabled(False)
            torch.set_printoptions(profile="default")

    return context


def entered(n: int, grad: bool = True, anomaly: bool = False, args=vec) -> list[Call]:
    return [
        Call(args, context=entry(grad, anomaly), label=f"grad {grad}, anomaly {anomaly}")
        for _ in range(n)
    ]


NET = """
import torch

torch.manual_seed(0)
net = torch.nn.Linear(4, 4)
"""


def program(body: str):
    return prog(NET + body, "predict")


# -- grad mode ----------------------------------------------------------------

LEAVES_NO_GRAD = """
def predict(x):
    torch.set_grad_enabled(False)  # the caller is left in no-grad mode (an eval script)
    return net(x)
"""


@backends(inductor=True)
def test_set_grad_enabled_false_is_left_off(backend):
    run_case(
        Case("set_grad_enabled_false_is_left_off", program(LEAVES_NO_GRAD), entered(4), min_hits=3),
        backend,
    )


AUTOGRAD_SET_GRAD_ENABLED = """
def predict(x):
    torch.autograd.set_grad_enabled(False)
    return net(x).relu()
"""


@backends()
def test_autograd_set_grad_enabled_plain_call(backend):
    run_case(
        Case(
            "autograd_set_grad_enabled_plain_call",
            program(AUTOGRAD_SET_GRAD_ENABLED),
            entered(4),
            min_hits=3,
        ),
        backend,
    )


NO_GRAD_ENTERED = """
def predict(x):
    torch.no_grad().__enter__()  # entered, never exited: grad mode stays off
    return net(x) * 2
"""


@backends()
def test_no_grad_entered_never_exited(backend):
    run_case(
        Case("no_grad_entered_never_exited", program(NO_GRAD_ENTERED), entered(4), min_hits=3),
        backend,
    )


OFF_THEN_ON = """
def predict(x):
    torch.set_grad_enabled(False)
    frozen = net(x)
    torch.set_grad_enabled(True)
    return frozen, net(x), frozen.requires_grad
"""


@backends(inductor=True)
def test_grad_off_then_on_inside_leaves_nothing(backend):
    run_case(
        Case(
            "grad_off_then_on_inside_leaves_nothing", program(OFF_THEN_ON), entered(4), min_hits=3
        ),
        backend,
    )


OPS_AFTER_SWITCH = """
def predict(x):
    tracked = net(x) * 2                 # grad on: a graph autograd follows
    torch.set_grad_enabled(False)
    frozen = net(tracked) + 1            # computed with grad off, as eager did
    print(round(frozen.sum().item(), 3)) # a value read between two graphs
    again = net(frozen)                  # the graph after it runs with grad off too
    return tracked, frozen, again, again.requires_grad
"""


def backward_on_tracked(env, result):
    with torch.enable_grad():  # the call left grad mode off
        result[0].sum().backward()


@backends(inductor=True)
def test_grad_switch_then_dependent_ops(backend):
    run_case(
        Case(
            "grad_switch_then_dependent_ops",
            program(OPS_AFTER_SWITCH),
            [
                Call(vec, context=entry(), then=backward_on_tracked, label="then backward")
                for _ in range(4)
            ],
            min_hits=3,
        ),
        backend,
    )


ENABLES_GRAD = """
def predict(x):
    torch.set_grad_enabled(True)  # a training step called from a no-grad caller
    return net(x).sum()
"""


@backends()
def test_caller_in_no_grad_is_left_with_grad(backend):
    run_case(
        Case(
            "caller_in_no_grad_is_left_with_grad",
            program(ENABLES_GRAD),
            [*entered(3, grad=False), *entered(3, grad=True), *entered(2, grad=False)],
            min_hits=5,
        ),
        backend,
    )


# -- print options ------------------------------------------------------------

SET_PRINTOPTIONS = """
def predict(x):
    torch.set_printoptions(precision=2)
    return net(x)
"""


@backends()
def test_set_printoptions_is_left_set(backend):
    run_case(
        Case("set_printoptions_is_left_set", program(SET_PRINTOPTIONS), entered(4), min_hits=3),
        backend,
    )


PRINTS_WITH_OPTIONS = """
def predict(x):
    y = net(x)
    torch.set_printoptions(precision=2, sci_mode=False)
    print(y)                      # formatted with the options just set
    torch.set_printoptions(linewidth=40)
    return y * 2
"""


@backends()
def test_print_after_set_printoptions(backend):
    run_case(
        Case("print_after_set_printoptions", program(PRINTS_WITH_OPTIONS), entered(4), min_hits=3),
        backend,
    )


PRINTOPTIONS_BLOCK = """
def predict(x):
    with torch._tensor_str.printoptions(precision=1):
        print(x)                  # printed with precision 1, the options restored after it
    return net(x)
"""


@backends()
def test_printoptions_block_is_refused(backend):
    result = run_case(
        Case("printoptions_block_is_refused", program(PRINTOPTIONS_BLOCK), entered(3)), backend
    )
    assert "printoptions" in (result.fallback_reason or "")


# -- anomaly detection --------------------------------------------------------

SET_DETECT_ANOMALY = """
def predict(x):
    torch.autograd.set_detect_anomaly(True)
    return net(x)
"""


@backends()
def test_set_detect_anomaly_is_left_on(backend):
    run_case(
        Case(
            "set_detect_anomaly_is_left_on",
            program(SET_DETECT_ANOMALY),
            [*entered(3), *entered(2, anomaly=True), *entered(2)],
            min_hits=4,
        ),
        backend,
    )


ANOMALY_OFF_NO_NAN_CHECK = """
def predict(x):
    torch.autograd.set_detect_anomaly(False, check_nan=False)
    return net(x), torch.is_anomaly_enabled()
"""


@backends()
def test_set_detect_anomaly_off_from_either_entry(backend):
    run_case(
        Case(
            "set_detect_anomaly_off_from_either_entry",
            program(ANOMALY_OFF_NO_NAN_CHECK),
            [*entered(2, anomaly=True), *entered(2), *entered(2, anomaly=True)],
            min_hits=4,
        ),
        backend,
    )


READS_ANOMALY = """
def predict(x):
    if torch.is_anomaly_enabled():
        return net(x).sum()
    return net(x)
"""


@backends()
def test_reads_anomaly_mode_of_the_caller(backend):
    run_case(
        Case(
            "reads_anomaly_mode_of_the_caller",
            program(READS_ANOMALY),
            [*entered(2), *entered(2, anomaly=True), *entered(2)],
            min_hits=3,
        ),
        backend,
    )


ANOMALY_BLOCK = """
def predict(x):
    with torch.autograd.set_detect_anomaly(True):
        y = net(x)
    return y.relu()
"""


@backends()
def test_detect_anomaly_block_leaves_nothing(backend):
    run_case(
        Case("detect_anomaly_block_leaves_nothing", program(ANOMALY_BLOCK), entered(4), min_hits=3),
        backend,
    )


# -- regions left open, the default dtype ---------------------------------------

INFERENCE_LEFT_OPEN = """
held = torch.inference_mode()

def predict(x):
    held.__enter__()  # never exited: the caller is left in inference mode
    return net(x)
"""


@backends()
def test_inference_mode_left_open_is_refused(backend):
    result = run_case(
        Case("inference_mode_left_open_is_refused", program(INFERENCE_LEFT_OPEN), entered(3)),
        backend,
    )
    assert "torch.inference_mode() on" in (result.fallback_reason or "")


AUTOCAST_LEFT_OPEN = """
held = torch.autocast("cpu", dtype=torch.bfloat16)

def predict(x):
    held.__enter__()  # never exited: later matmuls of the caller run in bfloat16
    return net(x)
"""


@backends()
def test_autocast_left_open_is_refused(backend):
    result = run_case(
        Case("autocast_left_open_is_refused", program(AUTOCAST_LEFT_OPEN), entered(3)), backend
    )
    assert "autocast" in (result.fallback_reason or "")


DEFAULT_DTYPE_LEFT = """
def predict(x):
    torch.set_default_dtype(torch.float64)  # F42: refused, the function runs eagerly
    return net(x), torch.ones(2)
"""


@backends()
def test_set_default_dtype_left_changed(backend):
    run_case(
        Case("set_default_dtype_left_changed", program(DEFAULT_DTYPE_LEFT), entered(3)), backend
    )


DETERMINISTIC_LEFT = """
def predict(x):
    torch.use_deterministic_algorithms(True)
    torch.set_grad_enabled(False)
    return net(x)
"""


@backends()
def test_deterministic_and_grad_mode_left(backend):
    run_case(
        Case(
            "deterministic_and_grad_mode_left",
            program(DETERMINISTIC_LEFT),
            entered(4),
            min_hits=2,  # the second call starts deterministic (a second record)
        ),
        backend,
    )
