"""The repository's own models: the corpus in ``tests/programs/`` and ``examples/``.

Both folders are written by other people and follow their own conventions
(``make_model()`` / ``make_inputs(seed)`` for the corpus, ``entry() -> (model,
args)`` for the examples, see ``docs/corpus.md`` and ``docs/entrypoints.md``).
They ship inputs of one size, so they are measured at that size only.  A file
that fails to load becomes a failed case in the report, never a crashed run.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from bench.zoo import ModelCase, ModelInputs

REPO_ROOT = Path(__file__).resolve().parent.parent
CORPUS_LOADER = REPO_ROOT / "tests" / "programs" / "loader.py"
CORPUS_SEED = 0


def _import_path(module_name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    if module_name in sys.modules:
        return sys.modules[module_name]
    module = importlib.util.module_from_spec(spec)
    # Registered before it runs: dataclasses look their module up in sys.modules.
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module


def _failing(name: str, origin: str, exc: BaseException) -> ModelCase:
    """A case whose build raises the load error, so the report records it against the model."""

    def build() -> Any:
        raise exc

    return ModelCase(name, origin, build, lambda batch: ModelInputs(), fixed_inputs=True)


def corpus_cases() -> list[ModelCase]:
    """One case per corpus program, with the program's inputs for seed 0."""
    if not CORPUS_LOADER.is_file():
        return []
    loader = _import_path("fullgraph_bench_corpus_loader", CORPUS_LOADER)
    cases = []
    for name in _breaking_first(loader):
        origin = f"tests/programs/{name}.py"
        try:
            program = loader.load_program(name)
        except Exception as exc:  # noqa: BLE001
            cases.append(_failing(name, origin, exc))
            continue
        cases.append(
            ModelCase(
                name,
                origin,
                program.make_model,
                _fixed_args(lambda program=program: program.make_inputs(CORPUS_SEED)),
                fixed_inputs=True,
            )
        )
    return cases


def _breaking_first(loader: ModuleType) -> list[str]:
    """Program names, those whose markers expect graph breaks first.

    They are where the compilers' graph counts differ, so they come first when
    the run's time budget cannot fit the whole corpus.
    """
    names = loader.program_names()
    expected = getattr(loader, "expected_breaks", None)
    if expected is None:
        return names
    return sorted(names, key=lambda name: not expected(name))


def _fixed_args(make_args: Callable[[], Any]) -> Callable[[int], ModelInputs]:
    def make_inputs(batch: int) -> ModelInputs:
        return ModelInputs(args=tuple(make_args()))

    return make_inputs


def example_cases() -> list[ModelCase]:
    """One case per entrypoint listed in ``examples.ENTRYPOINTS``."""
    try:
        examples = importlib.import_module("examples")
    except ImportError:
        return []
    cases = []
    for entrypoint in getattr(examples, "ENTRYPOINTS", []):
        module_name, _, function_name = entrypoint.partition(":")
        name = f"example:{module_name.rsplit('.', 1)[-1]}"
        origin = module_name.replace(".", "/") + ".py"
        try:
            entry = getattr(importlib.import_module(module_name), function_name)
        except Exception as exc:  # noqa: BLE001
            cases.append(_failing(name, origin, exc))
            continue
        cases.append(
            ModelCase(
                name,
                origin,
                lambda entry=entry: entry()[0],
                _fixed_args(lambda entry=entry: entry()[1]),
                fixed_inputs=True,
            )
        )
    return cases
