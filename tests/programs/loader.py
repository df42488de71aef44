"""Find, load and read the expectations of the corpus programs in this folder.

Each program is one module, ``tests/programs/<name>.py``, with ``make_model()``,
``make_inputs(seed)`` and ``EXPECTED_GRAPHS`` (optionally ``EXPECTED_MONITOR_RUNS``
and ``observe_state(model)``); lines where a graph break is
expected carry a trailing ``# BREAK: FG2xx`` marker (several codes may be
separated by commas).  The format is described in ``docs/corpus.md``.

Programs are loaded by file path under a private module name, so the tests,
``bench/coverage.py`` and a user's REPL all see the same module whatever the
current directory or ``sys.path`` is.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import sys
import tokenize
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

PROGRAMS_DIR = Path(__file__).resolve().parent

# Codes a marker may name: the runtime's break categories that split a graph.
MARKER_CODES = frozenset({"FG201", "FG202", "FG203", "FG204"})

_NOT_PROGRAMS = frozenset({"__init__", "loader"})
_MODULE_PREFIX = "fullgraph_corpus."
# A marker is a comment of its own: "# BREAK: FG201" or "# BREAK: FG201, FG202".  What
# the runtime keeps in the graph has its own kind: a value read checked in front of the
# graph is "# CHECK: FG202", an output effect made after it "# DEFER: FG201"; kinds on
# one line are separated by semicolons ("# BREAK: FG202; DEFER: FG201").  "# GRAPH: FG203"
# marks an op sized by data that stays in the graph: the runtime reports nothing there
# (it is not one of the kinds below), the static rules do.
MARKER_KINDS = ("BREAK", "CHECK", "DEFER")
_CODES = r"[A-Z0-9]+(?:\s*,\s*[A-Z0-9]+)*"
_MARKER = re.compile(
    rf"^#\s*(?:{'|'.join(MARKER_KINDS)}):\s*{_CODES}(?:\s*;\s*\w+:\s*{_CODES})*\s*$"
)
_PART = re.compile(rf"(?P<kind>\w+):\s*(?P<codes>{_CODES})")


@dataclasses.dataclass(frozen=True, order=True)
class ExpectedBreak:
    """A break a program's author expects: where it is and which category."""

    file: str
    line: int  # 1-based, as in the report
    code: str


def program_names() -> list[str]:
    """Names of every program in the corpus, sorted."""
    return sorted(path.stem for path in PROGRAMS_DIR.glob("*.py") if path.stem not in _NOT_PROGRAMS)


def program_path(name: str) -> Path:
    path = PROGRAMS_DIR / f"{name}.py"
    if not path.is_file():
        raise LookupError(f"no corpus program named {name!r} in {PROGRAMS_DIR}")
    return path


def load_program(name: str) -> ModuleType:
    """Import a program (once per process) and return its module."""
    module_name = _MODULE_PREFIX + name
    if module_name in sys.modules:
        return sys.modules[module_name]
    path = program_path(name)
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Registered before executing so that dataclasses and pickling can find it.
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module


def expected_breaks(name: str, kind: str = "BREAK") -> list[ExpectedBreak]:
    """The breaks a program's ``# BREAK:`` markers declare (``kind="CHECK"`` / ``"DEFER"``:
    its data checks / deferred effects), in line order.

    Comments are found with the tokenizer, so a ``# BREAK:`` inside a string
    is not a marker.
    """
    path = program_path(name)
    found: list[ExpectedBreak] = []
    with tokenize.open(path) as source:
        for token in tokenize.generate_tokens(source.readline):
            if token.type != tokenize.COMMENT:
                continue
            if _MARKER.search(token.string) is None:
                continue
            for part in _PART.finditer(token.string):
                if part["kind"] != kind:
                    continue
                for code in part["codes"].split(","):
                    found.append(ExpectedBreak(str(path), token.start[0], code.strip()))
    return sorted(found)


def expected_monitor_runs(module: ModuleType) -> int | None:
    """Monitoring runs the program should need for three calls on seeds 0, 1, 2.

    A program states ``EXPECTED_MONITOR_RUNS`` when its own state or its
    control flow makes later calls miss (a Python counter, a branch on data);
    ``None`` there means the count depends on runtime policy (data-dependent
    shapes, lifting a counter) and is not asserted exactly.  Otherwise every call after the first should
    hit the first record: 1.
    """
    return getattr(module, "EXPECTED_MONITOR_RUNS", 1)


def comparable_output(value: Any) -> Any:
    """A program's output with dataclasses turned into dicts, recursively.

    ``torch.testing.assert_close`` compares nested tuples, lists and dicts of
    tensors and numbers, but not dataclasses (``ModelOutput``-style results).
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            field.name: comparable_output(getattr(value, field.name))
            for field in dataclasses.fields(value)
        }
    if isinstance(value, dict):
        return {key: comparable_output(item) for key, item in value.items()}
    if isinstance(value, list):
        return [comparable_output(item) for item in value]
    if isinstance(value, tuple):  # named tuples compare as plain tuples
        return tuple(comparable_output(item) for item in value)
    return value


def output_leaves(value: Any) -> list[Any]:
    """Leaves of a program's output (tensors and Python scalars), in a fixed order."""
    value = comparable_output(value)
    if isinstance(value, dict):
        return [leaf for key in value for leaf in output_leaves(value[key])]
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in output_leaves(item)]
    return [value]


# Extra rows per call for the varying-size checks: two sizes, then three new ones.
BATCH_GROWTH = (0, 1, 3, 2, 5)


def with_batch_grown(inputs: tuple, extra: int) -> tuple:
    """``inputs`` with a batch ``extra`` rows larger (rows repeated cyclically).

    The batch is the first dimension of the first tensor; every tensor whose
    first dimension has that size grows with it, everything else is left as
    it is.  Returns ``inputs`` itself when it holds no tensor with a dimension.
    """
    from torch.utils._pytree import tree_flatten, tree_map

    tensors = [t for t in tree_flatten(inputs)[0] if isinstance(t, torch.Tensor) and t.dim()]
    if not tensors or extra == 0:
        return inputs
    batch = tensors[0].shape[0]
    rows = torch.arange(batch + extra) % batch

    def grow(value: Any) -> Any:
        if isinstance(value, torch.Tensor) and value.dim() and value.shape[0] == batch:
            return value[rows].clone()
        return value

    return tree_map(grow, inputs)
