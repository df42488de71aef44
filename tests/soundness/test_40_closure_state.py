"""Class 40: outside state reached only through closures, and output redirected.

A method of a class defined in a factory, or an inner function a helper makes
on each call, appends to a list captured from outside the call.  The monitor
gave closure cells a path only through a function that had a source, so the
list had none: the append was neither replayed nor guarded, and every replay
dropped it (found by a probe of Python-level programs).  Cells now get a path
through the class the method is found on, or through the function that made
the inner function; a cell with no path refuses the record.  Also here:
``print`` inside ``contextlib.redirect_stdout`` (a replay printed to the real
stdout), a program that reads its ``lru_cache``'s counters, and callables
handed to code the monitor does not see (``map(log.append, xs)``,
``ExitStack.callback``, ``max(items, key=operator.attrgetter("s"))``), which
changed or read outside state unseen.
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Case, backends, calls, execg, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="closures40")


def fresh(env):
    return (torch.randn(3),)


METHOD_CLOSURE = """
import torch

def make():
    log = []

    class Recorder:
        def go(self, x):
            log.append(round(float(x.sum()), 4))
            return 2

        @classmethod
        def tag(cls):
            log.append("tag")
            return 1

        @property
        def scale(self):
            log.append("scale")
            return 3

    def f(x):
        r = Recorder()
        return x * r.go(x) * Recorder.tag() * r.scale

    return f, log

f, log = make()
"""


@backends()
def test_a_method_appends_to_a_list_in_its_closure(backend):
    run_case(
        Case(
            "a_method_appends_to_a_list_in_its_closure",
            prog(METHOD_CLOSURE),
            calls(4, fresh),
            min_hits=2,
        ),
        backend,
    )


INNER_FUNCTION = """
import torch

def make():
    log = []

    def helper(x):
        def inner():
            log.append("inner")
        inner()
        return x + 1

    def f(x):
        return helper(x) * 2

    return f, log

f, log = make()
"""


@backends()
def test_an_inner_function_made_by_a_helper_appends_to_a_list(backend):
    run_case(
        Case(
            "an_inner_function_made_by_a_helper_appends_to_a_list",
            prog(INNER_FUNCTION),
            calls(4, fresh),
            min_hits=2,
        ),
        backend,
    )


REDIRECTED_PRINT = """
import contextlib
import io
import torch

buf = io.StringIO()

def f(x):
    with contextlib.redirect_stdout(buf):
        print("sum", round(float(x.sum()), 4))
    return x * 2
"""


@backends()
def test_print_under_redirect_stdout(backend):
    run_case(
        Case(
            "print_under_redirect_stdout",
            prog(REDIRECTED_PRINT),
            calls(3, fresh),
            watch=lambda env: env.ns.buf.getvalue(),
        ),
        backend,
    )


CACHE_COUNTERS = """
import functools
import torch

@functools.lru_cache(maxsize=2)
def mask(n):
    return torch.tril(torch.ones(n, n))

def f(x):
    m = mask(x.shape[0])
    return x @ m, mask.cache_info().hits
"""


@backends()
def test_a_program_reads_its_lru_cache_counters(backend):
    run_case(
        Case(
            "a_program_reads_its_lru_cache_counters",
            prog(CACHE_COUNTERS),
            calls(4, lambda env: (torch.ones(3, 3),)),
        ),
        backend,
    )


# ---------------------------------------------------------------------------
# Callables handed to code the monitor does not see: C code (map, partial, max's
# key) or unobserved library Python (ExitStack.callback) calls them unseen.

HANDED_APPEND = """
import contextlib
import functools
import torch

log = []

def f(x):
    functools.partial(log.append, "partial")()
    list(map(log.append, ["map"]))
    with contextlib.ExitStack() as stack:
        stack.callback(log.append, "callback")
        return x * 2
"""


@backends()
def test_an_outside_lists_append_handed_to_unseen_code(backend):
    run_case(
        Case(
            "an_outside_lists_append_handed_to_unseen_code",
            prog(HANDED_APPEND),
            calls(3, fresh),
        ),
        backend,
    )


ATTRGETTER_READS = """
import operator
import torch

class Item:
    def __init__(self, s):
        self.s = s

class Config:
    scale = 2.0

cfg = Config()
items = [Item(1.0), Item(2.0)]
extra = Item(1.5)
table = {"a": 2.0}
get_scale = operator.attrgetter("scale")

def f(x):
    best = max(items, key=operator.attrgetter("s")).s
    holder = type("Holder", (), {"extra": extra})  # made here, around an outside object
    scale = operator.attrgetter("extra.s")(holder)
    return x * get_scale(cfg) * best * sum(map(table.get, ["a"])) * scale
"""


@backends()
def test_reads_made_by_c_code_for_the_program(backend):
    run_case(
        Case(
            "reads_made_by_c_code_for_the_program",
            prog(ATTRGETTER_READS),
            [
                *calls(2, fresh),
                execg("items[0].s = 9.0"),
                *calls(2, fresh),
                execg("cfg.scale = 5.0"),
                *calls(2, fresh),
                execg("table['a'] = 3.0"),
                *calls(2, fresh),
                execg("extra.s = 0.5"),
                *calls(2, fresh),
            ],
            min_hits=3,
        ),
        backend,
    )


DECORATED_METHODS = """
import functools
import torch

log = []

def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        log.append(fn.__name__)
        return fn(*args, **kwargs)
    return wrapper

class Base(torch.nn.Module):
    def forward(self, x):
        return x + 1

class Scaled(Base):
    @torch.no_grad()
    def forward(self, x):
        return super().forward(x) * 2

class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Scaled()

    @logged
    def forward(self, x):
        return self.inner(x) - 1

block = Block()

def f(x):
    return block(x)
"""


@backends()
def test_decorated_methods_and_zero_argument_super(backend):
    """Methods reached through decorators (functools.wraps, torch.no_grad) whose cells
    are ``__class__`` (``super()``) or the decorated function: paths, not refusals."""
    run_case(
        Case(
            "decorated_methods_and_zero_argument_super",
            prog(DECORATED_METHODS),
            calls(4, fresh),
            min_hits=2,
        ),
        backend,
    )


NONLOCAL_COUNTERS = """
import torch

def make():
    count = 0
    scale = 1.0

    def f(x):
        nonlocal count, scale
        count += 1
        y = x * count
        count += 2
        scale = scale * 0.5
        if count > 9:
            y = y + 100
        return y + count, scale

    return f

f = make()

def cells():
    return [cell.cell_contents for cell in f.__closure__]
"""


@backends()
def test_nonlocal_counters_replay_their_expression(backend):
    # ``nonlocal count; count += 1`` pinned the stored number (a record per call, none
    # ever replayed); the mock now writes the cell as its expression, as for a global.
    run_case(
        Case(
            "nonlocal_counters",
            prog(NONLOCAL_COUNTERS),
            calls(6, lambda env: (torch.ones(2),)),
            watch=lambda env: env.ns.cells(),
            min_hits=3,
        ),
        backend,
    )
