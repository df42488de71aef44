"""Entrypoints that fail: one kills its process, one raises."""

import os


def build():
    os.abort()


def build_raises():
    raise RuntimeError("the builder failed on purpose")
