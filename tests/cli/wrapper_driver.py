"""Generate and run compiled wrappers of corpus programs, each step in a process of its own.

    python wrapper_driver.py generate OUT NAME [NAME ...]
    python wrapper_driver.py check BACKEND NAME=WRAPPER.py [NAME=WRAPPER.py ...]
    python wrapper_driver.py check-entry BACKEND MODULE:FN=WRAPPER.py [...]

``generate`` writes, per corpus program, an entry module
``OUT/corpus_entries/NAME.py`` (``entry()`` builds ``make_model()`` and the
inputs of seed 0) and the wrapper ``OUT/NAME_compiled.py`` that
``fullgraph.runtime.generate_wrapper`` makes from them; one JSON line each
says ``ok`` or why the wrapper was refused.

``check`` imports each wrapper from its file (so nothing of the generating
process is here) and calls ``wrapper.compile(make_model(), backend=BACKEND)``
on the inputs of seeds 0, 1 and 2 with grad enabled and then under
``torch.no_grad()``, comparing each output with a second, eagerly run
``make_model()``'s, and ``observe_state`` at the end; then
``wrapper.compiled`` (the entrypoint's own model) once.  ``check-entry`` does
the same for an entrypoint ``MODULE:FN`` (``examples/``): its sample inputs
and a second draw of the same shapes.  One JSON line per wrapper says what
replayed and what fell back, per mode, or the first error.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
import traceback
from pathlib import Path

import torch
from programs import loader
from torch.utils._pytree import tree_map

MODES = (("grad", torch.enable_grad), ("no_grad", torch.no_grad))
MARK = "WRAPPER-RESULT "


def _report(line: dict) -> None:
    # On a line of its own: a program may have printed without a newline.
    print("\n" + MARK + json.dumps(line), flush=True)


def generate(out: Path, names: list[str]) -> None:
    import fullgraph.runtime as fr

    package = out / "corpus_entries"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("")
    sys.path.insert(0, str(out))
    for name in names:
        (package / f"{name}.py").write_text(
            f'"""The entrypoint of the corpus program {name}."""\n\n'
            "from programs import loader\n\n"
            f"program = loader.load_program({name!r})\n\n\n"
            "def entry():\n"
            "    return program.make_model(), program.make_inputs(0)\n"
        )
        try:
            entry = importlib.import_module(f"corpus_entries.{name}")
            fn, args = entry.entry()
            source = fr.generate_wrapper(fn, *args, entrypoint=f"corpus_entries.{name}:entry")
        except Exception as error:  # noqa: BLE001 - reported per program
            _report({"name": name, "refused": f"{type(error).__name__}: {error}"})
            continue
        (out / f"{name}_compiled.py").write_text(source)
        _report({"name": name, "ok": True})


def _load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(f"wrapper_of_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _same(actual, expected, what: str) -> None:
    torch.testing.assert_close(
        loader.comparable_output(actual),
        loader.comparable_output(expected),
        msg=lambda message: f"{what}: {message}",
    )


def _run_modes(fast, eager, inputs_list) -> dict:
    counts = {}
    for label, mode in MODES:
        before = dict(fast.stats)
        with mode():
            for number, make_inputs in enumerate(inputs_list):
                expected = eager(*make_inputs())
                actual = fast(*make_inputs())
                _same(actual, expected, f"{label}, inputs {number}")
        counts[label] = {key: fast.stats[key] - before[key] for key in before}
    return counts


def check(name: str, path: str, backend: str) -> dict:
    wrapper = _load(path, name)
    program = loader.load_program(name)
    eager_model, model = program.make_model(), program.make_model()
    fast = wrapper.compile(model, backend=backend)
    inputs = [lambda seed=seed: program.make_inputs(seed) for seed in (0, 1, 2)]
    counts = _run_modes(fast, eager_model, inputs)
    if hasattr(program, "observe_state"):
        _same(program.observe_state(model), program.observe_state(eager_model), "state")
    compiled = _check_compiled(wrapper, program.make_model(), program.make_inputs(0), backend)
    runs = loader.expected_monitor_runs(program)
    return {"name": name, "counts": counts, "expected_monitor_runs": runs, **compiled}


def check_entry(entry: str, path: str, backend: str) -> dict:
    wrapper = _load(path, entry.replace(".", "_").replace(":", "_"))
    module, _, function = entry.partition(":")
    build = getattr(importlib.import_module(module), function)
    target, args = build()
    eager_target, _ = build()  # built the same way: equal weights
    generator = torch.Generator().manual_seed(1)
    other = tree_map(
        lambda v: (
            torch.randn(v.shape, generator=generator, dtype=v.dtype)
            if isinstance(v, torch.Tensor) and v.is_floating_point()
            else v
        ),
        args,
    )
    fast = wrapper.compile(target, backend=backend)
    counts = _run_modes(fast, eager_target, [lambda: args, lambda: other])
    return {"name": entry, "counts": counts, **_check_compiled(wrapper, build()[0], args, backend)}


def _check_compiled(wrapper, eager_target, args, backend: str) -> dict:
    """``wrapper.compiled`` (which builds its own target) once, against a fresh one."""
    wrapper.BACKEND = backend
    before = dict(wrapper.STATS)
    expected = eager_target(*args)
    _same(wrapper.compiled(*args), expected, "compiled")
    return {"compiled": {key: wrapper.STATS[key] - before[key] for key in before}}


def main(argv: list[str]) -> int:
    command, rest = argv[0], argv[1:]
    if command == "generate":
        generate(Path(rest[0]), rest[1:])
        return 0
    backend, pairs = rest[0], rest[1:]
    run = check if command == "check" else check_entry
    for pair in pairs:
        name, _, path = pair.partition("=")
        try:
            line = run(name, path, backend)
        except BaseException as error:  # noqa: BLE001 - reported per program
            line = {"name": name, "error": f"{error!r}"[:2000], "traceback": traceback.format_exc()}
        _report(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
