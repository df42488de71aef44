"""Programs for issue #17's comparison: what monitoring should capture that Dynamo cannot.

One module per program, ``<category>_<name>.py``, in the format of the corpus
(``tests/programs``, see ``docs/corpus.md``): ``make_model()``,
``make_inputs(seed)``, ``EXPECTED_GRAPHS`` (the goal: 1) and, for a training
step, ``GRADIENTS = True`` (parameter gradients of the summed outputs are
compared too).  ``bench/coverage.py --section capture`` measures them.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

PROGRAMS_DIR = Path(__file__).resolve().parent

# Category prefix of a file name -> what issue #17 calls it.
CATEGORIES = {
    "autograd": "custom autograd.Function, checkpoint",
    "legacy": "legacy / Python-level APIs",
    "rnn": "RNNs (LSTM, GRU, RNN, packed)",
    "branch": "data-dependent branches",
    "dynshape": "data-dependent shapes",
}

_MODULE_PREFIX = "fullgraph_capture."


def program_names() -> list[str]:
    """Every program, sorted by category (in ``CATEGORIES`` order), then name."""
    names = [path.stem for path in PROGRAMS_DIR.glob("*.py") if path.stem != "__init__"]
    order = list(CATEGORIES)
    return sorted(names, key=lambda name: (order.index(category(name)), name))


def category(name: str) -> str:
    prefix = name.split("_", 1)[0]
    if prefix not in CATEGORIES:
        raise LookupError(f"{name!r} does not start with a category ({', '.join(CATEGORIES)})")
    return prefix


def load_program(name: str) -> ModuleType:
    """Import a program by file path (once per process) and return its module."""
    module_name = _MODULE_PREFIX + name
    if module_name in sys.modules:
        return sys.modules[module_name]
    path = PROGRAMS_DIR / f"{name}.py"
    if not path.is_file():
        raise LookupError(f"no capture program named {name!r} in {PROGRAMS_DIR}")
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module
