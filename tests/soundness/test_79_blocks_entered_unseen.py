"""Class 79: ``with`` blocks whose ``__enter__`` runs where the monitor does not see it.

Found by the seventeenth session's control-flow probe (F320, F321).  The
interpreter enters a context manager itself (``BEFORE_WITH``), while the
``__exit__`` that ends the block is an ordinary call, replayed like any other.
For a lock, a semaphore or a condition (C or standard-library code) a replay
released what it had never taken: a semaphore's count grew by one per replay, a
lock the caller held was released under it (``RuntimeError`` in the caller), a
lock another thread held was released and not waited for.  A program's own
torch mode entered inside (an op counter) also saw fullgraph's tensor queries on
the monitored call, and every replay failed at its exit.  Such blocks are
refused now (the calls run eagerly, with the reason in the report).
"""

from __future__ import annotations

import threading
from functools import partial

import pytest
import torch
from harness import Call, Case, Do, calls, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="blocks79")

SEMAPHORE = """
import threading

import pytest
import torch

SEM = threading.Semaphore(2)  # at most two forwards at once

def f(x):
    with SEM:
        return x * 4
"""


def test_a_semaphore_around_the_forward():
    case = Case(
        "semaphore", prog(SEMAPHORE), calls(4, lambda env: (torch.randn(3),)),
        watch=lambda env: env.ns.SEM._value,
    )  # fmt: skip
    result = run_case(case, "eager")
    assert "threading.Semaphore" in (result.fallback_reason or "")


RLOCK = """
import threading

import pytest
import torch

LOCK = threading.RLock()

def f(x):
    with LOCK:
        return x + 1
"""


def _called_holding_the_lock(env):
    return env.ns.LOCK


def test_a_reentrant_lock_the_caller_holds():
    # The caller holds the lock around the call: a replay that only released it made
    # the caller's own ``with`` raise at its exit.
    script = [
        Call(lambda env: (torch.randn(3),), context=_called_holding_the_lock) for _ in range(4)
    ]
    run_case(Case("rlock", prog(RLOCK), script, watch=lambda env: env.ns.LOCK._is_owned()), "eager")


COUNTING_MODE = """
import pytest
import torch
from torch.overrides import TorchFunctionMode

class Count(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.names.append(getattr(func, "__name__", str(func)))
        return func(*args, **(kwargs or {}))

COUNTER = Count()

def f(x):
    with COUNTER:
        y = x * 2 + 1
    return y
"""


def test_an_op_counter_entered_inside():
    case = Case(
        "counting_mode", prog(COUNTING_MODE), calls(4, lambda env: (torch.randn(3),)),
        watch=lambda env: list(env.ns.COUNTER.names),
    )  # fmt: skip
    run_case(case, "eager")


def test_a_lock_another_thread_holds_is_waited_for():
    import time

    import fullgraph.runtime as fr

    lock = threading.Lock()
    state = {"scale": 1.0}

    def f(x):
        with lock:
            return x * state["scale"]

    compiled = fr.compile(f, backend="eager")
    for _ in range(3):
        compiled(torch.ones(2))

    def writer():
        with lock:
            time.sleep(0.3)
            state["scale"] = 5.0

    thread = threading.Thread(target=writer)
    thread.start()
    time.sleep(0.05)
    out = compiled(torch.ones(2))  # eager waits for the writer
    thread.join()
    assert out.tolist() == [5.0, 5.0]
    assert not lock.locked()


LIBRARY_BLOCKS = {
    # F326: numpy's @contextmanager was taken for the program's own (its generator was
    # never entered in a replay: the array printed with the default precision).
    "numpy_printoptions": """
import numpy as np
import pytest
import torch

def f(x):
    with np.printoptions(precision=2):
        text = str(x.numpy())
    return x * 2, text
""",
    # F327: a subclass of a manager refused by name escaped the refusal: a replay never
    # ran the pack hook.
    "saved_tensors_hooks_subclass": """
import pytest
import torch

PACKED = []

class CountSaved(torch.autograd.graph.saved_tensors_hooks):
    def __init__(self):
        super().__init__(self.pack, lambda t: t)

    def pack(self, t):
        PACKED.append(tuple(t.shape))
        return t

def f(x):
    with CountSaved():
        y = (x * x).sum()
    return y, len(PACKED)
""",
    # ``stack.enter_context(lock)`` enters the lock as unseen as ``with`` does.
    "exit_stack_entering_a_lock": """
import contextlib
import threading

import pytest
import torch

LOCK = threading.Lock()

def f(x):
    with contextlib.ExitStack() as stack:
        stack.enter_context(LOCK)
        return x + 1
""",
}


def _library_block_state(env):
    return (
        list(getattr(env.ns, "PACKED", [])),
        env.ns.LOCK.locked() if hasattr(env.ns, "LOCK") else None,
    )


@pytest.mark.parametrize("name", sorted(LIBRARY_BLOCKS))
def test_a_library_block_whose_entry_a_replay_would_skip(name):
    args = lambda env: (torch.randn(3, requires_grad=name.startswith("saved")),)
    case = Case(name, prog(LIBRARY_BLOCKS[name]), calls(4, args), watch=_library_block_state)
    run_case(case, "eager")


EXIT_STACK = """
import contextlib

import pytest
import torch

def f(x, frozen):
    with contextlib.ExitStack() as stack:
        if frozen:
            stack.enter_context(torch.no_grad())
        return x * 2
"""


def test_an_exit_stack_entering_torch_blocks_replays():
    # ExitStack itself enters nothing: refused by F320 at first, replayed again.
    script = [
        Call(lambda env, frozen=frozen: (torch.randn(3, requires_grad=True), frozen))
        for frozen in (True, True, False, False, True)
    ]
    run_case(Case("exit_stack", prog(EXIT_STACK), script, min_hits=2), "eager")


EMA_SCOPE = """
import contextlib

import torch

model = torch.nn.Linear(4, 4)

class EMA:
    def __init__(self):
        self.shadow = [p.detach().clone() * 0.5 for p in model.parameters()]

    @contextlib.contextmanager
    def average_parameters(self):
        backup = [p.detach().clone() for p in model.parameters()]
        for s, p in zip(self.shadow, model.parameters()):
            p.data.copy_(s)
        try:
            yield
        finally:
            for b, p in zip(backup, model.parameters()):
                p.data.copy_(b)

ema = EMA()

@torch.no_grad()
def f(x):
    with ema.average_parameters():
        return model(x)
"""


def _update_the_shadow(env):
    for s in env.ns.ema.shadow:
        s.mul_(0.9)


def test_a_contextmanager_method_of_the_program_replays():
    # F335: the method (an ``ema_scope``) was a callout (it is handed an object from
    # outside), whose manager no replay could enter: the function never compiled.
    step = Call(lambda env: (torch.randn(2, 4),))
    script = [step, step, Do(_update_the_shadow, "ema update"), step, step, step]
    watch = lambda env: [*env.ns.model.parameters(), *env.ns.ema.shadow]
    run_case(Case("ema_scope", prog(EMA_SCOPE), script, watch=watch, min_hits=3), "eager")
