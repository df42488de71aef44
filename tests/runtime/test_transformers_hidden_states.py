"""A transformers model asked once for its hidden states keeps replaying.

Transformers (5.x) installs forward hooks on the model's layers the first time a
call asks for hidden states or attentions, marks the model as hooked, and leaves
the hooks in place (inactive unless a call collects outputs).  The installing
call can't be a record; before, it stopped monitoring, so every later call of
the model ran eagerly.  Now the next call is monitored with the hooks in place
and both settings replay.
"""

from __future__ import annotations

import pytest
import torch

import fullgraph.runtime as fr

transformers = pytest.importorskip("transformers")


def _tiny_bert() -> torch.nn.Module:
    config = transformers.BertConfig(
        vocab_size=64,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=32,
    )
    torch.manual_seed(0)
    return transformers.BertModel(config).eval()


def test_hidden_states_once_then_both_settings_replay():
    model, twin = _tiny_bert(), _tiny_bert()
    compiled = fr.compile(model, backend="eager")
    settings = [False, False, True, False, True, False, False]
    with torch.no_grad():
        for call, hidden in enumerate(settings):
            ids = torch.randint(0, 64, (1, 8), generator=torch.Generator().manual_seed(call))
            out = compiled(ids, output_hidden_states=hidden)
            expected = twin(ids, output_hidden_states=hidden)
            assert torch.equal(out.last_hidden_state, expected.last_hidden_state)
            if hidden:
                assert len(out.hidden_states) == len(expected.hidden_states) == 3
                for got, want in zip(out.hidden_states, expected.hidden_states):
                    assert torch.equal(got, want)
            else:
                assert out.hidden_states is None
    stats = compiled.stats
    assert stats.fallbacks == 0 and stats.monitoring_stopped is None
    # no hidden states, the installing call, then one record per setting
    assert stats.monitor_runs == 4
    assert stats.hits == len(settings) - stats.monitor_runs
