"""A library call that raises an exception the program catches is replayed, not refused.

transformers 5.25 asks ``torch.cuda.is_current_stream_capturing()`` inside a
``try``/``except Exception`` in the middle of every attention mask; on a CPU build of
torch the call raises.  Such a run made no record (every transformers model then ran
eagerly), and the query split the graph.  What the user sees: the function replays,
in one graph, its mock shows the call made through ``catching`` with a mid-guard on
the exception, and the standalone wrapper does the same.  The soundness of replaying
such calls (the call returning later, the exception read) is class 43 of
``tests/soundness``.
"""

from __future__ import annotations

import torch

import fullgraph.runtime as fr

CAPTURE_QUERY = (
    "import torch\n\n"
    "def is_capturing():\n"
    "    try:\n"
    "        return torch.cuda.is_current_stream_capturing()\n"
    "    except Exception:\n"
    "        return False\n\n"
    "def masked(x):\n"
    "    h = torch.tanh(x) * 2.0\n"
    "    if not is_capturing():\n"
    "        h = h + 1.0\n"
    "    return h.softmax(-1)\n"
)


def _load(tmp_path, monkeypatch, name: str):
    (tmp_path / f"{name}.py").write_text(CAPTURE_QUERY)
    monkeypatch.syspath_prepend(str(tmp_path))
    return __import__(name)


def test_a_raising_setting_query_replays_in_one_graph(tmp_path, monkeypatch):
    program = _load(tmp_path, monkeypatch, "capture_query_target")
    compiled = fr.compile(program.masked, backend="eager")
    for _ in range(4):
        x = torch.randn(2, 5)
        torch.testing.assert_close(compiled(x), program.masked(x))
    assert (compiled.stats.monitor_runs, compiled.stats.hits) == (1, 3)
    (record,) = compiled.records
    assert len(record.graphs) == 1  # the query is made in front of the graph: no split
    if (
        not torch.cuda.is_available()
    ):  # the query raises (a CPU build, a CUDA build without a driver)
        assert "catching(is_current_stream_capturing)" in record.mock_source
        assert "raised_as(c0, " in record.mock_source


def test_the_standalone_wrapper_replays_the_raising_query(tmp_path, monkeypatch):
    program = _load(tmp_path, monkeypatch, "capture_query_wrapped")
    source = fr.generate_wrapper(program.masked, torch.randn(2, 5))
    (tmp_path / "capture_query_wrapper.py").write_text(source)
    import capture_query_wrapper

    for _ in range(3):
        x = torch.randn(2, 5)
        torch.testing.assert_close(capture_query_wrapper.compiled(x), program.masked(x))
    assert capture_query_wrapper.STATS == {"replays": 3, "fallbacks": 0}


def test_the_wrapper_template_defines_every_helper_a_mock_calls():
    from fullgraph.runtime.record.mock_support import HELPERS
    from fullgraph.runtime.wrapper.template import TEMPLATE

    missing = [name for name in HELPERS if f"_mock.{name}" not in TEMPLATE]
    assert not missing  # a mock calling one of these would fall back in the wrapper
