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


def _run(cache: str) -> dict:
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache}
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM],
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
