"""Compatibility name for the interpreter check (the details live in ``cpython``)."""

from fullgraph.runtime.cpython import SUPPORTED_VERSIONS, UnsupportedPythonError, check_supported

__all__ = ["SUPPORTED_VERSIONS", "UnsupportedPythonError", "check_supported"]
