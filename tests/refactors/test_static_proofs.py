"""What the static rules take as proof (issue 16, point 3): Optional tensor arguments,
explicit annotations, and FG106 claims it cannot prove (logging, branches on data)."""

from __future__ import annotations

import pytest

from fullgraph.refactors import fix_source, lint_source


def _findings(source: str, code: str):
    return [f for f in lint_source(source) if f.code == code]


def _run(source: str, name: str, *args):
    namespace: dict = {}
    exec(compile(source, "<test>", "exec"), namespace)  # noqa: S102 - the code under test
    try:
        return "ok", namespace[name](*args)
    except Exception as error:  # noqa: BLE001 - the outcome a user sees, its type compared
        return "raised", type(error)


OPTIONAL_ASSERT = """import torch
from typing import Optional
from torch import nn


class Masked(nn.Module):
    def forward(self, x: torch.Tensor, mask: {annotation} = None) -> torch.Tensor:
        assert (mask >= 0).all(), "negative mask"
        return x * mask


def masked(x, mask):
    return Masked()(x, mask)
"""


@pytest.mark.parametrize(
    "annotation", ["Optional[torch.Tensor]", "torch.Tensor | None", "'Optional[torch.Tensor]'"]
)
def test_assert_on_an_optional_tensor_argument_is_found_and_fixed_alike(annotation):
    source = OPTIONAL_ASSERT.format(annotation=annotation)
    (finding,) = _findings(source, "FG103")
    assert finding.line == 8 and finding.fix is not None
    torch = pytest.importorskip("torch", reason="running the fix needs torch")
    fixed = fix_source(source)
    assert "check((mask >= 0).all(), AssertionError" in fixed
    x = torch.ones(3)
    for mask in (torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, -1.0, 0.0]), None):
        before, after = _run(source, "masked", x, mask), _run(fixed, "masked", x, mask)
        assert before[0] == after[0]
        if before[0] == "ok":
            assert torch.equal(before[1], after[1])
        else:
            assert before[1] is after[1]  # AssertionError, or TypeError for None


def test_an_optional_tensor_is_not_a_tensor_in_a_branch_a_rewrite_would_run_untaken():
    # torch.where would compute `mask * 2` even when the branch is not taken: with
    # mask=None that raises where the original did not.
    source = """import torch
from typing import Optional
from torch import nn


class M(nn.Module):
    def forward(self, x: torch.Tensor, mask: Optional[torch.Tensor] = None):
        if x.sum() > 0:
            y = mask * 2
        else:
            y = x
        if mask is not None:
            y = y + 1
        return y
"""
    findings = _findings(source, "FG101")
    assert [f.line for f in findings] == [8]  # `mask is not None` is a Python bool
    assert findings[0].fix is None and findings[0].refusal_reason
    assert fix_source(source) == source


ANNOTATED = """import torch
from torch import nn


def helper(x):
    return x * 3


class M(nn.Module):
    def forward(self, x):
        h{annotation} = helper(x)
        if h.sum() > 0:
            h = h * 2
        else:
            h = h - 1
        return h
"""


def test_an_explicit_tensor_annotation_is_proof_of_a_tensor():
    plain = ANNOTATED.format(annotation="")
    annotated = ANNOTATED.format(annotation=": torch.Tensor")
    # helper's result could be anything: no claim about `h.sum() > 0`, no rewrite.
    assert all(f.fix is None for f in _findings(plain, "FG101"))
    (proven,) = _findings(annotated, "FG101")
    assert proven.fix is not None
    fixed = fix_source(annotated)
    assert "torch.where(" in fixed
    torch = pytest.importorskip("torch", reason="running the fix needs torch")
    for x in (torch.ones(2), -torch.ones(2)):
        model_before, model_after = _run(annotated, "M"), _run(fixed, "M")
        assert torch.equal(model_before[1](x), model_after[1](x))


@pytest.mark.parametrize(
    "setup, call",
    [
        ("import logging\nlog = logging.getLogger(__name__)\n", "log.info('scaling %s', x.shape)"),
        ("from transformers.utils import logging\nlogger = logging.get_logger(__name__)\n",
         "logger.warning_once('scaling')"),
        ("import logging\n", "logging.getLogger(__name__).debug('scaling')"),
        ("", "self_log.warning('scaling')"),  # a logger the rule cannot trace: still logging
    ],
)  # fmt: skip
def test_fg106_does_not_call_a_function_that_logs_side_effect_free(setup, call):
    source = (
        f"import torch\n{setup}\n\ndef scale(x: torch.Tensor, self_log=None) -> torch.Tensor:\n"
        f"    {call}\n    return x * 2\n"
    )
    (finding,) = _findings(source, "FG106")
    assert finding.fix is None
    assert "HAS_PYTHON_SIDE_EFFECTS" in finding.refusal_reason


def test_fg106_refuses_branches_on_tensor_data_here_and_in_a_callee():
    source = """import torch


def clip_inner(x: torch.Tensor) -> torch.Tensor:
    return x / 2 if x.abs().max().item() > 1 else x


def clip(x: torch.Tensor) -> torch.Tensor:
    return clip_inner(x) * 2


def steer(x: torch.Tensor) -> torch.Tensor:
    if x.sum() > 0:
        return x
    return -x
"""
    findings = {f.message.split("`")[1]: f for f in _findings(source, "FG106")}
    for name in ("clip_inner", "clip", "steer"):
        assert findings[name].fix is None, name
        assert "HAS_DATA_DEPENDENT_BRANCHES" in findings[name].refusal_reason
    assert "(in `clip_inner`)" in findings["clip"].refusal_reason


def test_fg106_still_offers_a_function_without_effects_or_data_branches():
    source = (
        "import torch\nimport logging\nlog = logging.getLogger(__name__)\n\n\n"
        "def scale(x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:\n"
        "    if mask is not None:\n        x = x * mask\n    return x * 2\n"
    )
    (finding,) = _findings(source, "FG106")
    assert finding.fix is not None and finding.refusal_reason is None


def test_a_method_with_a_dotted_decorator_does_not_stop_the_rules(caplog):
    # Seen on real code (autoformer, esmfold, vitdet, informer): `@torch.no_grad()` on a
    # method called from forward made FG101 raise, and its findings of the file were lost.
    source = """import torch
from torch import nn


class M(nn.Module):
    @torch.no_grad()
    def scores(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2

    def forward(self, x: torch.Tensor):
        if self.scores(x).sum() > 0:
            x = x + 1
        return x
"""
    with caplog.at_level("ERROR"):
        findings = _findings(source, "FG101")
    assert not caplog.records
    assert [f.line for f in findings] == [11]


# -- false alarms found reviewing transformers (docs/refactors.md) -----------------------


@pytest.mark.parametrize(
    "call",
    ["torch.repeat_interleave(sin[:, :, None, :], 2, 3)", "torch.repeat_interleave(x, repeats=stride, dim=1)"],
)  # fmt: skip
def test_fg105_does_not_report_repeat_interleave_with_python_repeats(call):
    # gptj and funnel: the repeats are Python ints, the output shape does not depend on data.
    source = (
        "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n"
        "    def forward(self, x: torch.Tensor, sin: torch.Tensor, stride: int = 2):\n"
        f"        return {call}\n"
    )
    assert _findings(source, "FG105") == []


def test_fg105_still_reports_repeat_interleave_with_tensor_repeats():
    source = (
        "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n"
        "    def forward(self, x: torch.Tensor, counts: torch.Tensor):\n"
        "        return torch.repeat_interleave(x, counts, dim=0), torch.repeat_interleave(counts)\n"
    )
    assert len(_findings(source, "FG105")) == 2


@pytest.mark.parametrize(
    "signature",
    [
        "mask: torch.Tensor, dtype: torch.dtype, tgt_len: int | None = None",  # kosmos2_5
        "query: torch.Tensor, dropout: float | int = 0.0",  # gemma2
        "query: torch.Tensor, scaling: Optional[float] = None",  # doge
    ],
)
def test_fg106_counts_optional_and_union_numbers_as_primitive_parameters(signature):
    source = (
        f"import torch\nfrom typing import Optional\n\n\ndef attend({signature}) -> torch.Tensor:\n"
        f"    return {signature.split(':')[0]} * 2\n"
    )
    (finding,) = _findings(source, "FG106")
    assert finding.fix is None and "HAS_PRIMITIVE_PARAMETERS" in finding.refusal_reason


@pytest.mark.parametrize(
    "body, shown",
    [
        ("    return x.sum(0).tolist()\n", "`x.sum(0).tolist()`"),  # llava_next
        ("    return torch.unique(x)\n", "`torch.unique`"),  # grounding_dino
        ("    return x.nonzero()\n", "`x.nonzero`"),
    ],
)
def test_fg106_refuses_reads_of_tensor_data_outside_conditions(body, shown):
    source = f"import torch\n\n\ndef f(x: torch.Tensor):\n{body}"
    (finding,) = _findings(source, "FG106")
    assert finding.fix is None
    assert "READS_TENSOR_DATA" in finding.refusal_reason and shown in finding.refusal_reason


@pytest.mark.parametrize("flag", ["output_attentions", "interpolate_pos_encoding"])
def test_a_forward_switch_parameter_is_not_taken_for_a_tensor(flag):
    # squeezebert, maskformer_swin: `def forward(self, x, output_attentions)` then
    # `if output_attentions:` — a Python bool, no break.
    source = (
        "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n"
        f"    def forward(self, hidden_states, {flag}):\n"
        f"        if {flag}:\n            hidden_states = hidden_states * 2\n"
        "        return hidden_states\n"
    )
    assert _findings(source, "FG101") == []


def test_a_forward_tensor_parameter_is_still_taken_for_one():
    source = (
        "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n"
        "    def forward(self, hidden_states, scores):\n"
        "        if scores.sum() > 0:\n            hidden_states = hidden_states * 2\n"
        "        return hidden_states\n"
    )
    assert [f.line for f in _findings(source, "FG101")] == [7]


def _position_ids(parameter: str) -> str:
    # prophetnet's positional embeddings: an int cast of a shape's item plus a cache length.
    return (
        "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n"
        f"    def forward(self, x, {parameter}, cache=None, position_ids=None):\n"
        "        if position_ids is None:\n"
        f"            num_input_ids = {parameter}[1] + cache.get_seq_length()\n"
        "            position_ids = torch.ones((1, 1), dtype=torch.long) * (\n"
        "                int(self.padding_idx + num_input_ids)\n"
        "            )\n"
        "        return x + position_ids\n"
    )


@pytest.mark.parametrize("parameter", ["inputs_shape", "batch_size", "shape"])
def test_fg104_does_not_report_int_of_a_forward_parameter_named_like_a_size(parameter):
    assert _findings(_position_ids(parameter), "FG104") == []


@pytest.mark.parametrize("parameter", ["lengths", "spatial_shapes"])
def test_fg104_still_reports_int_of_a_forward_tensor_parameter(parameter):
    (finding,) = _findings(_position_ids(parameter), "FG104")
    assert "int(self.padding_idx + num_input_ids)" in finding.message


def test_fg106_does_not_call_a_function_that_changes_its_argument_side_effect_free():
    # qwen2_5_omni: `kwargs.pop("pool_indices", None)` changes the caller's dict.
    source = (
        "import torch\n\n\ndef pool(lengths: torch.Tensor, kwargs: dict) -> torch.Tensor:\n"
        "    found = kwargs.pop('pool_indices', None)\n    return lengths * 2\n"
    )
    (finding,) = _findings(source, "FG106")
    assert finding.fix is None and "changes its argument" in finding.refusal_reason
