"""``fullgraph compile module:fn -o OUT.py``: a standalone module that replays the record.

The generated file is imported in a fresh process (nothing of the CLI's run
survives), called on the entrypoint's sample inputs (outputs equal eager) and on
an input whose guard fails (it falls back to the original function and is
still right), and it passes ``ruff check``.  The module exports ``compiled`` (the
entrypoint's target), ``compile`` (the user's own) and ``STATS``.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

from cli_helpers import REPO, needs_torch, needs_wrapper, run_cli

FRESH_PROCESS_CHECK = textwrap.dedent(
    """
    import importlib.util, sys
    import torch
    sys.path.insert(0, {repo!r})
    spec = importlib.util.spec_from_file_location("wrapper_under_test", {path!r})
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert sorted(module.__all__) == ["STATS", "compile", "compiled"], module.__all__
    compiled = module.compiled

    from examples.clean_mlp import entry
    fn, args = entry()
    with torch.no_grad():
        expected = fn(*args)
        assert torch.allclose(compiled(*args), expected, rtol=1e-4, atol=1e-5), "sample inputs"
        assert torch.allclose(compiled(*args), expected, rtol=1e-4, atol=1e-5), "second call"
        other = (torch.randn(3, 256),)  # another batch size: the guard fails
        assert torch.allclose(compiled(*other), fn(*other), rtol=1e-4, atol=1e-5), "fallback"
    print("WRAPPER OK")
    """
)


@needs_wrapper
def test_compiled_wrapper_runs_standalone_and_passes_ruff(tmp_path):
    out = tmp_path / "clean_mlp_compiled.py"
    completed = run_cli("compile", "examples.clean_mlp:entry", "-o", str(out), cwd=REPO)
    assert completed.returncode == 0, completed.stderr
    assert f"wrote {out}" in completed.stderr
    source = out.read_text()
    compile(source, str(out), "exec")

    _runs_in_a_fresh_process(FRESH_PROCESS_CHECK, out, tmp_path)
    _passes_ruff(out, tmp_path)


def _runs_in_a_fresh_process(script: str, out, tmp_path) -> None:
    check = subprocess.run(
        [sys.executable, "-c", script.format(repo=str(REPO), path=str(out))],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        check=False,
    )
    assert check.returncode == 0, check.stderr
    assert "WRAPPER OK" in check.stdout


def _passes_ruff(out, tmp_path) -> None:
    ruff = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", str(out)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert ruff.returncode == 0, ruff.stdout + ruff.stderr


@needs_wrapper
def test_compile_to_stdout():
    completed = run_cli("compile", "examples.clean_mlp:entry", cwd=REPO)
    assert completed.returncode == 0, completed.stderr
    assert "def " in completed.stdout


@needs_torch  # the module, examples/clean_mlp.py, imports torch
def test_compile_of_a_missing_function_is_a_config_error():
    missing = run_cli("compile", "examples.clean_mlp:no_such_function", cwd=REPO)
    assert missing.returncode == 2
    assert "expected module 'examples.clean_mlp' to define 'no_such_function'" in missing.stderr


DATA_CHECK_PROCESS_CHECK = textwrap.dedent(
    """
    import importlib.util, sys
    import torch
    sys.path.insert(0, {repo!r})
    spec = importlib.util.spec_from_file_location("wrapper_under_test", {path!r})
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert sorted(module.__all__) == ["STATS", "compile", "compiled"], module.__all__
    compiled = module.compiled

    from examples.assert_on_data import entry
    fn, args = entry()
    with torch.no_grad():
        for _ in range(2):
            x = torch.randn(64, 256)
            assert torch.allclose(compiled(x), fn(x), rtol=1e-4, atol=1e-5), "finite input"
        bad = torch.randn(64, 256)
        bad[3, 7] = float("nan")  # the data check misses: the original raises its own error
        try:
            compiled(bad)
        except AssertionError as error:
            assert "NaN or inf" in str(error), error
        else:
            raise SystemExit("the NaN input passed the data check")
    print("WRAPPER OK")
    """
)


@needs_wrapper
def test_wrapper_runs_the_data_check_in_front_of_its_graph(tmp_path):
    out = tmp_path / "assert_on_data_compiled.py"
    completed = run_cli("compile", "examples.assert_on_data:entry", "-o", str(out), cwd=REPO)
    assert completed.returncode == 0, completed.stderr
    source = out.read_text()
    assert "class Check0(torch.nn.Module)" in source and "h0 = check0(" in source
    _runs_in_a_fresh_process(DATA_CHECK_PROCESS_CHECK, out, tmp_path)
    _passes_ruff(out, tmp_path)
