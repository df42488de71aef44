"""A replayed log call is made at the user's line, with this call's values.

``logging`` finds the caller by walking the stack, which in a replay is the
mock; the replay builds the record at the location the monitoring run saw.
"""

from __future__ import annotations

import io
import logging

import torch

import fullgraph.runtime as fr

stream = io.StringIO()
handler = logging.StreamHandler(stream)
handler.setFormatter(
    logging.Formatter("%(filename)s:%(lineno)d %(funcName)s %(levelname)s %(message)s")
)
log = logging.getLogger("fullgraph.test.location")
log.addHandler(handler)
log.setLevel(logging.INFO)
log.propagate = False


def step(x):
    loss = x.sum().item()
    log.info("loss %.1f", loss)
    log.debug("hidden %d", 1)
    log.log(logging.WARNING, "rows %d", x.shape[0])
    return x * 2


def lines_of(fn, calls):
    stream.seek(0)
    stream.truncate()
    for i in range(calls):
        fn(torch.full((2,), float(i)))
    return stream.getvalue().splitlines()


def test_log_records_carry_the_users_line_and_this_calls_values():
    compiled = fr.compile(step, backend="eager")
    assert lines_of(compiled, 4) == lines_of(step, 4)
    assert compiled.stats.hits == 3
    first = step.__code__.co_firstlineno
    assert lines_of(compiled, 1) == [
        f"test_logging_location.py:{first + 2} step INFO loss 0.0",
        f"test_logging_location.py:{first + 4} step WARNING rows 2",
    ]
