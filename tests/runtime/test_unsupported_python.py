"""Acceptance: an unsupported CPython gets a clear error at compile time, never a wrong result.

The monitor reads the CPython value stack with a per-version layout; on a
version without a tested reader ``fullgraph.runtime.compile`` must raise
``UnsupportedPythonError`` when it is called — before the user's function
runs — and say which version was found.  The version is faked by
monkeypatching ``sys.version_info``, which the runtime reads through
``fullgraph.runtime.pyversion.check_supported()``.
"""

from __future__ import annotations

import collections
import sys

import pytest
import torch

import fullgraph.runtime as fr

if not hasattr(fr, "compile"):
    pytest.skip("fullgraph.runtime.compile is not built yet (issue 2)", allow_module_level=True)
pyversion = pytest.importorskip(
    "fullgraph.runtime.pyversion", reason="fullgraph.runtime.pyversion is not built yet (issue 2)"
)
if not hasattr(pyversion, "check_supported"):
    pytest.skip("fullgraph.runtime.pyversion.check_supported is missing", allow_module_level=True)

FakeVersionInfo = collections.namedtuple("FakeVersionInfo", "major minor micro releaselevel serial")

UNSUPPORTED = [(3, 8), (3, 10), (3, 14), (3, 99), (4, 0)]


@pytest.fixture
def pretend_python(monkeypatch):
    """``pretend_python(major, minor)``: ``sys.version_info`` reads as that version
    for the rest of the test (monkeypatch restores it)."""

    def pretend(major: int, minor: int) -> None:
        monkeypatch.setattr(sys, "version_info", FakeVersionInfo(major, minor, 0, "final", 0))

    return pretend


CALLS: list = []


def user_function(x):
    CALLS.append(x)
    return x + 1


@pytest.mark.parametrize("version", [(3, 11), (3, 12), (3, 13)], ids=lambda v: f"{v[0]}.{v[1]}")
def test_python_3_11_to_3_13_are_supported(pretend_python, version):
    pretend_python(*version)
    pyversion.check_supported()


def test_a_free_threaded_build_is_refused(monkeypatch):
    import sysconfig

    real = sysconfig.get_config_var
    monkeypatch.setattr(
        sysconfig,
        "get_config_var",
        lambda name: 1 if name == "Py_GIL_DISABLED" else real(name),
    )
    with pytest.raises(fr.UnsupportedPythonError, match="free-threaded"):
        pyversion.check_supported()
    CALLS.clear()
    with pytest.raises(fr.UnsupportedPythonError, match="free-threaded"):
        fr.compile(user_function, backend="eager")
    assert CALLS == []


def test_a_build_with_the_gil_switched_off_is_refused(monkeypatch):
    monkeypatch.setattr(sys, "_is_gil_enabled", lambda: False, raising=False)
    with pytest.raises(fr.UnsupportedPythonError, match="free-threaded"):
        pyversion.check_supported()


@pytest.mark.parametrize("version", UNSUPPORTED, ids=lambda v: f"{v[0]}.{v[1]}")
def test_check_supported_rejects_versions_without_a_reader(pretend_python, version):
    pretend_python(*version)
    with pytest.raises(fr.UnsupportedPythonError, match=rf"\b{version[0]}\.{version[1]}\b"):
        pyversion.check_supported()


@pytest.mark.parametrize("version", UNSUPPORTED, ids=lambda v: f"{v[0]}.{v[1]}")
def test_compile_raises_at_compile_time_naming_the_version(pretend_python, version):
    CALLS.clear()
    pretend_python(*version)
    with pytest.raises(fr.UnsupportedPythonError, match=rf"\b{version[0]}\.{version[1]}\b"):
        fr.compile(user_function, backend="eager")
    assert CALLS == [], "the user's function must not run"


def test_compile_of_a_module_raises_too(pretend_python):
    pretend_python(3, 99)
    with pytest.raises(fr.UnsupportedPythonError):
        fr.compile(torch.nn.Linear(2, 2), backend="eager")


def test_explain_raises_too(pretend_python):
    if not hasattr(fr, "explain"):
        pytest.skip("fullgraph.runtime.explain is not built yet (issue 2)")
    CALLS.clear()
    pretend_python(3, 99)
    with pytest.raises(fr.UnsupportedPythonError):
        fr.explain(user_function, torch.randn(2))
    assert CALLS == []


def test_compile_works_again_on_the_real_version(pretend_python, monkeypatch):
    pretend_python(3, 99)
    with pytest.raises(fr.UnsupportedPythonError):
        fr.compile(user_function, backend="eager")
    monkeypatch.undo()
    compiled = fr.compile(user_function, backend="eager")
    torch.testing.assert_close(compiled(torch.zeros(2)), torch.ones(2))
