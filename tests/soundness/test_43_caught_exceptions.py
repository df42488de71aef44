"""Class 43: library calls that raise, and the program catches what they raise.

``try: torch.cuda.is_current_stream_capturing() except Exception: return False`` is
how transformers 5.25 asks whether a CUDA graph is being captured; on a CPU build of
torch the call raises.  A monitoring run in which such a call raised made no record
at all, so every transformers model ran eagerly on every call (found this session,
F140).  Such a call is now replayed through ``catching(...)`` and a mid-guard checks
that it raised the same exception again (type, ``args`` and the fields ``args``
does not decide, such as ``OSError.filename``); a call that returns, or raises
another exception, misses, and a replay that missed hands the monitoring run the
exception to raise again.  Also here (F141): ``traceback.format_exc()``,
``log.exception(...)`` and other calls that show the exception being handled made
the replay show ``NoneType: None``; they now refuse the record.
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Case, backends, calls, execg, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="caught43")


def fresh(env):
    return (torch.randn(3),)


# Each twin gets its own folder (made when the program loads), so a file one twin
# creates is not seen by the other.
FILE_PROBE = """
import os, tempfile
import torch

DIR = tempfile.mkdtemp(prefix="fg43-")

def size_or_none(name):
    try:
        return os.path.getsize(os.path.join(DIR, name))
    except FileNotFoundError:
        return None

def f(x):
    size = size_or_none("weights.bin")
    if size is None:
        return x * 2.0
    return x + size
"""


@backends(inductor=True)
def test_a_missing_file_then_a_present_one(backend):
    run_case(
        Case(
            "a_missing_file_then_a_present_one",
            prog(FILE_PROBE),
            calls(3, fresh)
            + [execg("open(os.path.join(DIR, 'weights.bin'), 'w').write('abc')")]
            + calls(2, fresh)
            + [execg("os.remove(os.path.join(DIR, 'weights.bin'))")]
            + calls(2, fresh),
            watch=lambda env: {},  # each twin's folder has its own name: outputs decide
            min_hits=3,
        ),
        backend,
    )


# transformers' ``is_cuda_stream_capturing``: the CPU build's dummy class raises.
CAPTURE_QUERY = """
import torch

def is_capturing():
    try:
        return torch.cuda.is_current_stream_capturing()
    except Exception:
        return False

def f(x):
    h = x.relu()
    if not is_capturing():
        h = h + 1.0
    return h * 3.0
"""


@backends(inductor=True)
def test_a_capture_query_that_raises_on_a_cpu_build_replays(backend):
    run_case(
        Case(
            "a_capture_query_that_raises_on_a_cpu_build_replays",
            prog(CAPTURE_QUERY),
            calls(4, fresh),
            min_hits=3,
            max_monitor_runs=1,
        ),
        backend,
    )


# The handler reads the exception: its message and a field ``args`` leaves out.
EXCEPTION_READ = """
import os, tempfile
import torch

DIR = tempfile.mkdtemp(prefix="fg43-")
NAME = ["a.bin"]
seen = []

def f(x):
    try:
        os.path.getsize(os.path.join(DIR, NAME[0]))
        scale = 1.0
    except OSError as error:
        seen.append(os.path.basename(error.filename))
        seen.append(error.strerror)
        print("missing:", os.path.basename(error.filename))
        scale = 2.0
    return x * scale
"""


@backends()
def test_the_handler_reads_the_exception_it_caught(backend):
    run_case(
        Case(
            "the_handler_reads_the_exception_it_caught",
            prog(EXCEPTION_READ),
            calls(3, fresh)
            + [execg("NAME[0] = 'b.bin'")]
            + calls(2, fresh)
            + [execg("os.mkdir(os.path.join(DIR, 'c.bin', )); NAME[0] = 'c.bin/x'")]
            + calls(2, fresh),
            watch=lambda env: list(env.ns.seen),
            min_hits=3,
        ),
        backend,
    )


# The program keeps the exception object: the replay hands over the new one.
EXCEPTION_KEPT = """
import os
import torch

errors = []

def f(x):
    try:
        os.path.getsize("/nonexistent-fg43/missing")
    except FileNotFoundError as error:
        errors.append(error)
        print("kept", error)
    return x * 2.0
"""


@backends()
def test_the_program_keeps_the_exception_it_caught(backend):
    run_case(
        Case(
            "the_program_keeps_the_exception_it_caught",
            prog(EXCEPTION_KEPT),
            calls(4, fresh),
            watch=lambda env: [
                (type(e).__name__, e.args, e.filename.rsplit("/", 1)[-1]) for e in env.ns.errors
            ],
            min_hits=2,
        ),
        backend,
    )


# Two probes: the second changes while the first still raises.  The replay misses at
# the second mid-guard, and the monitoring run it hands over to gets the first
# probe's exception raised again instead of a second call.
TWO_PROBES = """
import os, tempfile
import torch

DIR = tempfile.mkdtemp(prefix="fg43-")
calls_made = []

def probe(name):
    calls_made.append(name)
    return os.path.getsize(os.path.join(DIR, name))

def f(x):
    try:
        a = probe("a")
    except FileNotFoundError:
        a = -1
    try:
        b = probe("b")
    except FileNotFoundError:
        b = -1
    return x * (a + 10) + b
"""


@backends()
def test_a_later_probe_changes_while_an_earlier_one_still_raises(backend):
    run_case(
        Case(
            "a_later_probe_changes_while_an_earlier_one_still_raises",
            prog(TWO_PROBES),
            calls(3, fresh)
            + [execg("open(os.path.join(DIR, 'b'), 'w').write('xy')")]
            + calls(3, fresh),
            watch=lambda env: list(env.ns.calls_made),
            min_hits=3,
        ),
        backend,
    )


# What a handler shows of the exception being handled: a replay has none.
FORMATTED_TRACEBACK = """
import traceback
import torch

table = {}
shown = []

def f(x):
    try:
        scale = table["scale"]
    except KeyError:
        shown.append(traceback.format_exc().strip().splitlines()[-1])
        scale = 2.0
    return x * scale
"""


@backends()
def test_a_handler_that_formats_the_traceback(backend):
    run_case(
        Case(
            "a_handler_that_formats_the_traceback",
            prog(FORMATTED_TRACEBACK),
            calls(3, fresh) + [execg("table['scale'] = 3.0")] + calls(2, fresh),
        ),
        backend,
    )


LOGGED_EXCEPTION = """
import logging
import torch

lines = []

class Keep(logging.Handler):
    def emit(self, record):
        lines.append(self.format(record).splitlines()[-1])

log = logging.getLogger(f"caught43.{id(lines)}")  # one per twin
log.propagate = False
log.handlers[:] = [Keep()]
table = {}

def f(x):
    try:
        scale = table["scale"]
    except KeyError:
        log.exception("no scale")
        log.warning("falling back", exc_info=True)
        scale = 2.0
    return x * scale
"""


@backends()
def test_a_handler_that_logs_the_exception(backend):
    run_case(
        Case(
            "a_handler_that_logs_the_exception",
            prog(LOGGED_EXCEPTION),
            calls(3, fresh),
            watch=lambda env: list(env.ns.lines),
        ),
        backend,
    )


# Nothing raised after all: the call returns on every call, and replays as before.
NEVER_RAISES = """
import os
import torch

def f(x):
    try:
        n = os.cpu_count()
    except RuntimeError:
        n = 1
    return x * float(n > 0)
"""


@backends()
def test_a_guarded_call_that_never_raises_still_replays(backend):
    run_case(
        Case(
            "a_guarded_call_that_never_raises_still_replays",
            prog(NEVER_RAISES),
            calls(4, fresh),
            min_hits=3,
        ),
        backend,
    )


# A library's own exception, its fields in its __dict__ (json's pos, msg, doc):
# compared by the mid-guard with its args, and read by the handler.
BAD_CONFIG = """
import json
import torch

CONFIG = ['{"scale": 2.0,']

def f(x):
    try:
        scale = json.loads(CONFIG[0])["scale"]
    except json.JSONDecodeError as error:
        print("bad config at", error.pos, error.msg)
        scale = 1.0
    return x * scale
"""


@backends()
def test_a_librarys_exception_with_fields_of_its_own(backend):
    run_case(
        Case(
            "a_librarys_exception_with_fields_of_its_own",
            prog(BAD_CONFIG),
            calls(3, fresh)
            + [execg("CONFIG[0] = '{\"scale\": 2.0,,,'")]
            + calls(2, fresh)
            + [execg("CONFIG[0] = '{\"scale\": 3.0}'")]
            + calls(2, fresh),
            min_hits=3,
        ),
        backend,
    )
