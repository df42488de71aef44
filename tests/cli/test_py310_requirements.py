"""requirements-py310.txt (the torch-free Python 3.10 leg) follows pyproject.toml.

It lists the project's dependencies and its dev extra verbatim, less torch and
the packages only the runtime's tests use; a dependency added to pyproject.toml
and not here would make the 3.10 leg fail on an import, not on a test.
"""

from __future__ import annotations

import re
import sys

from cli_helpers import REPO

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

# In the dev extra for tests/runtime, tests/soundness and tests/bench only.
RUNTIME_ONLY = {"torch", "numpy", "matplotlib", "hypothesis"}


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~;\s\[]", requirement, maxsplit=1)[0].lower()


def _normal(requirement: str) -> str:
    return requirement.replace(" ", "").replace('"', "'")


def test_the_310_requirements_are_pyprojects_less_torch():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = project["dependencies"] + project["optional-dependencies"]["dev"]
    expected = {_normal(r) for r in declared if _name(r) not in RUNTIME_ONLY}
    lines = (REPO / "requirements-py310.txt").read_text(encoding="utf-8").splitlines()
    listed = {_normal(line) for line in lines if line.strip() and not line.startswith("#")}
    assert listed == expected
