"""Suite-wide: every guard the runtime builds runs natively and in Python, and they agree.

The native guard tree (``fullgraph.runtime.record.native_guards``) is a second
rendering of the checks a user reads as Python.  With parity on, each call
runs both; a call the tree passes and the Python guard refuses is recorded
(and raised inside the call, where the runtime may swallow it by running the
program again), so this fixture fails the test that saw it.  The tree may
refuse more (tensor dispatch keys).  Without torch (the Python 3.10 leg)
there is no runtime.
"""

from __future__ import annotations

import pytest

try:
    from fullgraph.runtime.record import native_guards
except ImportError:  # no torch on this interpreter: nothing builds guards
    native_guards = None


@pytest.fixture(autouse=True)
def _native_guards_agree_with_python():
    if native_guards is None:
        yield
        return
    native_guards.PARITY = True
    start = len(native_guards.PARITY_FAILURES)
    yield
    failures = native_guards.PARITY_FAILURES[start:]
    assert not failures, "the native guard passed calls the Python guard refused:\n" + "\n".join(
        failures
    )
