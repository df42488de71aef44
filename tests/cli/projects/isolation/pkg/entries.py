"""Entrypoints that misbehave in every way the analysis worker must survive."""

import os
import sys
import time


def sleeps_forever():
    time.sleep(10**6)


def aborts():
    print("about to abort", flush=True)
    os.abort()


def prints_megabytes():
    line = "x" * 1023
    for _ in range(8 * 1024):  # 8 MiB on stdout
        print(line)
    sys.stderr.write("done printing\n")
    raise RuntimeError("stopped after printing")


def exits():
    sys.exit(3)


def raises():
    return _build_model()


def _build_model():
    raise ValueError("cannot build the sample batch")


def returns_wrong_shape():
    return 42


def returns_non_callable():
    return ("not callable", ())


def returns_bad_args():
    return (print, 5)


NOT_A_FUNCTION = 3


def forks_then_aborts():
    """The forked child keeps the worker's pipes open; the abort must still be seen."""
    if os.fork() == 0:
        time.sleep(60)
        os._exit(0)
    os.abort()
