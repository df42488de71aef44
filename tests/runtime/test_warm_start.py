"""A second process that compiles the same model reuses Inductor's on-disk graph cache.

fullgraph hands Inductor fake copies of the inputs in a tracing context, as
Dynamo does; with real tensors Inductor skipped its FX graph cache ("No
shape env") and every process compiled every graph again.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

PROGRAM = textwrap.dedent(
    """
    import json, torch
    import fullgraph.runtime as fr
    from torch._dynamo.utils import counters

    class Head(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Linear(16, 16), torch.nn.Linear(16, 4)

        def forward(self, x):
            return self.b(torch.relu(self.a(x))).softmax(-1)

    torch.manual_seed(0)
    model = Head().eval()
    compiled = fr.compile(model, eager_check=False)
    x = torch.randn(2, 16)
    with torch.no_grad():
        for _ in range(2):
            torch.testing.assert_close(compiled(x), model(x))
    print(json.dumps({"hits": compiled.stats.hits, **counters["inductor"]}))
    """
)


def _run(cache: str, program: str = PROGRAM) -> dict:
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache}
    done = subprocess.run(
        [sys.executable, "-c", program],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.inductor
def test_a_second_process_hits_the_fx_graph_cache(tmp_path):
    cache = str(tmp_path / "inductor")
    first = _run(cache)
    assert first.get("fxgraph_cache_miss") == 1 and first["hits"] == 1
    second = _run(cache)
    assert second.get("fxgraph_cache_hit") == 1, second
    assert "fxgraph_cache_miss" not in second and "fxgraph_cache_bypass" not in second
    assert second["hits"] == 1



@pytest.mark.inductor
def test_compiles_keep_the_saved_tensors_of_the_backward(monkeypatch):
    # AOTAutograd may "donate" (free as it runs) the buffers a backward saved: with a
    # graph loaded from the on-disk caches, ``loss.backward(retain_graph=True)`` after a
    # replay raised "compiled with non-empty donated buffers" (F264).  Every compile of
    # fullgraph's, static or size-generic, runs with donation off (for the process: the
    # backward checks the switch again when it runs).
    import torch
    import torch._functorch.config as functorch_config
    import torch._inductor.compile_fx as inductor_compile

    import fullgraph.runtime as fr

    seen = []
    original = inductor_compile.compile_fx

    def spy(*args, **kwargs):
        seen.append(functorch_config.donated_buffer)
        return original(*args, **kwargs)

    monkeypatch.setattr(inductor_compile, "compile_fx", spy)
    monkeypatch.setattr(functorch_config, "donated_buffer", True)  # torch's default
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    compiled = fr.compile(model, eager_check=False)
    for batch in (3, 3, 5, 6, 7):  # sizes vary: the size-generic compile too
        loss = compiled(torch.randn(batch, 4)).pow(2).sum()
        loss.backward(retain_graph=True)
        loss.backward()
    assert seen and not any(seen), seen
