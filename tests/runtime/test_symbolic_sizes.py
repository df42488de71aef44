"""Sizes the program reads stay symbolic once input sizes vary (issue 3).

After a second input size, the next monitoring run follows every size the
program reads (``x.shape``, ``x.size(0)``, ``len(x)``) as an expression over
the input sizes: the graph computes it, a comparison becomes a guard on the
outcome, an output re-reads it.  One record then serves every size; only a
use that needs the exact number (``range(s)``, ``f"{s}"``) pins it.
"""

from __future__ import annotations

import logging

import pytest
import torch
from torch import nn

import fullgraph.runtime as fr


def flatten_by_size(x):
    return x.view(x.shape[0], -1).sum(1)


def test_a_size_read_to_reshape_gives_one_size_generic_record():
    compiled = fr.compile(flatten_by_size, backend="eager")
    for batch in (2, 3, 5, 7, 3):
        x = torch.randn(batch, 4, 4)
        torch.testing.assert_close(compiled(x), flatten_by_size(x))
    assert compiled.stats.monitor_runs == 2
    assert compiled.records[0].dynamic_shapes
    assert "size(0)" in compiled.records[0].graphs[0].code


class Attention(nn.Module):
    """Causal self-attention written the usual way: sizes unpacked, sliced, rebuilt."""

    def __init__(self, width: int = 16, heads: int = 4):
        super().__init__()
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.heads = heads
        self.position = nn.Parameter(torch.randn(1, 64, width))

    def forward(self, x):
        batch, length, width = x.shape
        x = x + self.position[:, :length]
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        split = (*x.shape[:-1], self.heads, -1)
        q, k, v = (t.view(split).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / (width // self.heads) ** 0.5
        future = torch.triu(torch.ones(length, length, dtype=torch.bool), 1)
        weights = scores.masked_fill(future, float("-inf")).softmax(-1)
        mixed = (weights @ v).transpose(1, 2).reshape(batch, length, width)
        return self.out(mixed), length * batch


def test_attention_that_reads_its_sizes_is_monitored_twice_for_any_number_of_sizes():
    model = Attention()
    compiled = fr.compile(model, backend="eager")
    for batch, length in [(2, 5), (3, 7), (4, 9), (2, 3), (5, 12), (3, 7)]:
        x = torch.randn(batch, length, 16)
        (out, count), (expected, expected_count) = compiled(x), model(x)
        torch.testing.assert_close(out, expected)
        assert count == expected_count and type(count) is int
    assert compiled.stats.monitor_runs == 2
    # The returned number is re-read from each call's input, not replayed as a constant.
    assert "A[0].shape[1]" in compiled.records[0].mock_source


def test_a_size_of_one_gets_a_record_of_its_own():
    model = Attention()
    compiled = fr.compile(model, backend="eager")
    for batch, length in [(2, 5), (3, 7), (4, 9), (1, 6), (1, 8), (2, 1), (3, 1)]:
        x = torch.randn(batch, length, 16)
        torch.testing.assert_close(compiled(x)[0], model(x)[0])
    # The size-generic record was built assuming sizes other than 1 (as broadcasting
    # decides differently for 1); batch 1 and length 1 each get a record, reused.
    assert compiled.stats.monitor_runs == 4
    assert compiled.stats.hits == 3


class LongInputsTruncated(nn.Module):
    def forward(self, x):
        if x.shape[1] > 8:
            x = x[:, :8]
        return x * 2


def test_a_comparison_on_a_size_becomes_a_guard_on_its_outcome():
    model = LongInputsTruncated()
    compiled = fr.compile(model, backend="eager")
    for length in (3, 4, 5, 6, 12, 13, 14, 5):
        x = torch.randn(2, length)
        torch.testing.assert_close(compiled(x), model(x))
    # 3 then 4 (sizes vary), then 12 (the other side of the comparison): 3 runs.
    assert compiled.stats.monitor_runs == 3
    guards = "\n".join(r.guard_source for r in compiled.records)
    assert "(A[0].shape[1] > 8)" in guards


def steps_by_length(x):
    total = x[:, 0]
    for i in range(1, x.shape[1]):
        total = total + x[:, i]
    return total


def test_a_size_that_decides_a_loop_count_is_pinned_by_the_guard():
    compiled = fr.compile(steps_by_length, backend="eager")
    for length in (3, 4, 5, 4, 3):
        x = torch.randn(2, length)
        torch.testing.assert_close(compiled(x), steps_by_length(x))
    # range() needs the exact length: each length is its own record, reused on repeat.
    assert compiled.stats.monitor_runs == 3
    assert compiled.stats.hits == 2
    assert any("A[0].shape[1] == 4" in r.guard_source for r in compiled.records)


def print_shape(x):
    print("shape", x.shape)
    return x + 1


def test_a_printed_shape_is_the_shape_of_each_call(capsys):
    compiled = fr.compile(print_shape, backend="eager")
    for batch in (2, 3, 5, 6):
        compiled(torch.randn(batch, 4))
    printed = capsys.readouterr().out.splitlines()
    assert printed == [f"shape torch.Size([{b}, 4])" for b in (2, 3, 5, 6)]
    assert compiled.stats.monitor_runs == 2


def mean_of_positive_rows(x):
    rows = x[x.sum(1) > 0]  # as many rows as the data says: a callout
    return rows.mean(0) * rows.shape[0]


def test_a_callout_whose_result_size_varies_settles_on_one_record():
    compiled = fr.compile(mean_of_positive_rows, backend="eager")
    generator = torch.Generator().manual_seed(0)
    counts = set()
    for _ in range(8):
        x = torch.randn(6, 3, generator=generator)
        x[0] = 1.0  # at least one positive row
        counts.add(int((x.sum(1) > 0).sum()))
        torch.testing.assert_close(compiled(x), mean_of_positive_rows(x))
    assert len(counts) >= 3  # the data really gave results of several sizes
    # The first run keeps x[mask] in the graph until Python reads rows.shape[0]; from then
    # on it is a callout, whose first miss on the result's size makes it symbolic: one
    # more record serves all.
    assert compiled.stats.monitor_runs == 3
    assert "leaves(c0)[0].shape" in compiled.records[0].mock_source


LOG = logging.getLogger("fullgraph.tests.sizes")


def log_sizes(x):
    LOG.warning("rows %d of %s", x.size(0), tuple(x.shape))
    return x * 2


def test_a_logging_call_gets_each_call_s_sizes_without_pinning_them(caplog):
    compiled = fr.compile(log_sizes, backend="eager")
    for batch in (2, 3, 5, 6):
        x = torch.randn(batch, 4)
        torch.testing.assert_close(compiled(x), x * 2)
    messages = [r.getMessage() for r in caplog.records if r.name == LOG.name]
    assert messages == [f"rows {b} of ({b}, 4)" for b in (2, 3, 5, 6)]
    # The call is replayed with each call's sizes, so it need not pin them.
    assert compiled.stats.monitor_runs == 2


def report_sizes(x):
    print(f"batch {x.size(0)} of {tuple(x.shape)}")
    return x.relu()


def test_an_f_string_of_sizes_is_rebuilt_from_each_call(capsys):
    compiled = fr.compile(report_sizes, backend="eager")
    for batch in (2, 3, 5, 6):
        compiled(torch.randn(batch, 4))
    printed = capsys.readouterr().out.splitlines()
    assert printed == [f"batch {b} of ({b}, 4)" for b in (2, 3, 5, 6)]
    assert compiled.stats.monitor_runs == 2  # the message did not pin the batch size


@pytest.mark.inductor
def test_inductor_compiles_the_size_generic_graph(inductor_tolerance):
    model = Attention()
    compiled = fr.compile(model, backend="inductor")
    for batch, length in [(2, 5), (3, 7), (5, 9), (4, 3)]:
        x = torch.randn(batch, length, 16)
        torch.testing.assert_close(compiled(x)[0], model(x)[0], **inductor_tolerance)
    assert compiled.stats.monitor_runs == 2


@pytest.mark.parametrize("architecture", ["bert", "gpt2"])
def test_a_transformers_model_serves_new_batch_sizes_and_lengths_without_monitoring(
    architecture,
):
    transformers = pytest.importorskip(
        "transformers", reason="transformers is a bench dependency, not a dev one"
    )
    sizes = {
        "vocab_size": 100,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "max_position_embeddings": 64,
    }
    if architecture == "bert":
        config = transformers.BertConfig(hidden_size=32, intermediate_size=64, **sizes)
        model = transformers.BertModel(config)
    else:
        config = transformers.GPT2Config(
            n_embd=32,
            n_layer=2,
            n_head=2,
            n_positions=64,
            vocab_size=100,
            bos_token_id=1,
            eos_token_id=2,
            pad_token_id=0,
        )
        model = transformers.GPT2Model(config)
    model.eval()
    compiled = fr.compile(model, backend="eager")
    with torch.no_grad():
        for batch, length in [(2, 8), (2, 12), (3, 16), (2, 9), (4, 20), (3, 7)]:
            ids = torch.randint(3, 100, (batch, length))
            mask = torch.ones_like(ids)
            ours = compiled(input_ids=ids, attention_mask=mask).last_hidden_state
            eager = model(input_ids=ids, attention_mask=mask).last_hidden_state
            torch.testing.assert_close(ours, eager)
    # Length varies at the 2nd call, batch size at the 3rd: after that, every shape replays.
    assert compiled.stats.monitor_runs == 3
    assert compiled.stats.hits == 3
    assert compiled.records[0].dynamic_shapes
    # Broadcasting assumed a batch other than 1: a batch of 1 is a record of its own.
    assert "(K['attention_mask'].shape[0] != 1)" in compiled.records[0].guard_source


def test_an_empty_batch_does_not_break_a_size_generic_guard():
    # F314: a size fact ``2 % (2 * T) != 0`` checked before ``T >= 2`` raised
    # ZeroDivisionError for T == 0: taken for a replay error, the call was monitored
    # again each time (and a record that can't run again would have raised it).
    lin = torch.nn.Linear(4, 4)
    compiled = fr.compile(lin, backend="eager")
    for t in (5, 6, 9, 0, 3, 0, 4, 0, 7, 0):
        x = torch.randn(2, t, 4)
        assert torch.equal(compiled(x), lin(x))
    assert compiled.stats.rerun_after_error == 0
    assert compiled.stats.records <= 3
