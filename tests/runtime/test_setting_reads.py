"""Reads a replay makes in front of the graph instead of splitting it.

transformers asks cached availability and version probes in the middle of a
forward (``is_torch_distributed_available()`` in every wav2vec2-style encoder,
``is_torch_less_or_equal(...)`` in every MoE layer), marked as compile-time
constants (``_dynamo_marked_constant``) and wrapped in ``functools.lru_cache``,
which the monitor cannot see into.  Each was a callout that split the graph
(Mixtral: 9 graphs).  Such a probe, like a read of a process setting, is now made
in front of the graph and its result checked there: one graph, still replayed.
"""

from __future__ import annotations

import functools

import torch

import fullgraph.runtime as fr

CALLS = {"probe": 0}


@functools.lru_cache
def distributed_available() -> bool:
    CALLS["probe"] += 1
    return False


distributed_available.__wrapped__._dynamo_marked_constant = True


def encoder(x):
    h = torch.tanh(x) * 2.0
    if not distributed_available():
        h = h + 1.0
    return h.softmax(-1)


def test_a_marked_constant_probe_is_made_in_front_of_the_graph():
    compiled = fr.compile(encoder, backend="eager")
    for _ in range(4):
        x = torch.randn(2, 5)
        torch.testing.assert_close(compiled(x), encoder(x))
    assert (compiled.stats.monitor_runs, compiled.stats.hits) == (1, 3)
    (record,) = compiled.records
    assert len(record.graphs) == 1
    assert "setting read in front of the graph" in record.mock_source


def test_the_probes_answer_is_still_checked():
    compiled = fr.compile(encoder, backend="eager")
    x = torch.randn(2, 5)
    compiled(x)
    compiled(x)
    distributed_available.cache_clear()
    original = distributed_available.__wrapped__.__code__
    try:  # the probe answers otherwise now: the replay misses and monitors again
        distributed_available.__wrapped__.__code__ = (lambda: True).__code__
        torch.testing.assert_close(compiled(x), encoder(x))
        assert compiled.stats.monitor_runs == 2
    finally:
        distributed_available.__wrapped__.__code__ = original
        distributed_available.cache_clear()
