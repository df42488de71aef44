"""Every reason a fix is refused: the finding stays, carries the reason, and has no fix."""

from __future__ import annotations

import textwrap

import pytest

from fullgraph.refactors import fix_source, lint_source

HEADER = "import torch\nfrom torch import nn\n\n\ndef helper(x):\n    return x\n\n\n"


def _function(body: str, signature: str = "x: torch.Tensor, y: torch.Tensor") -> str:
    return HEADER + f"def f({signature}):\n" + textwrap.indent(textwrap.dedent(body), "    ")


REFUSALS = [
    # FG101: predicated control flow
    (
        "FG101",
        "if x.sum() > 0:\n    y = x\nelif x.sum() < -1:\n    y = -x\nelse:\n    y = x * 0\nreturn y\n",
        "has an `elif`",
    ),
    (
        "FG101",
        "if x.sum() > 0:\n    y = x\nelif x.sum() < -1:\n    y = -x\nelse:\n    y = x * 0\nreturn y\n",
        "is an `elif` of another `if`",
    ),
    (
        "FG101",
        "if x.sum() > 0:\n    for _ in range(2):\n        y = y * 2\nreturn y\n",
        "nested `for` statement",
    ),
    ("FG101", "if x.sum() > 0:\n    y += x\nreturn y\n", "updates a value in place"),
    (
        "FG101",
        "if x.sum() > 0:\n    raise ValueError('no')\nelse:\n    y = x\nreturn y\n",
        "raises",
    ),
    ("FG101", "if x.sum() > 0:\n    helper(x)\n    y = x\nreturn y\n", "expression statement"),
    (
        "FG101",
        "if x.sum() > 0:\n    z = x * 2\nreturn z\n",
        "`z` is bound only when the condition is true",
    ),
    ("FG101", "if x > 0:\n    y = x\nreturn y\n", "not provably a single value"),
    ("FG101", "if x.sum():\n    y = x * 2\nreturn y\n", "not provably a boolean tensor"),
    ("FG101", "return x * 2 if x.sum() else x\n", "not provably a boolean tensor"),
    (
        "FG101",
        "if torch.equal(x, y):\n    y = x * 2\nreturn y\n",
        "Python bool computed from tensor data",
    ),
    ("FG101", "if x.sum() > 0:\n    y = x[y.long()]\nreturn y\n", "computed index"),
    ("FG101", "if x.sum() > 0:\n    y = torch.linalg.inv(x)\nreturn y\n", "can fault on some data"),
    ("FG101", "if x.sum() > 0:\n    y = torch.rand_like(x)\nreturn y\n", "random numbers"),
    ("FG101", "if x.sum() > 0:\n    y = helper(x)\nreturn y\n", "cannot prove the call free"),
    ("FG101", "if x.sum() > 0:\n    y = x.add_(1)\nreturn y\n", "updates a tensor in place"),
    # A method of a call's result is not the torch function of that name (torch.tanh.nonzero).
    (
        "FG101",
        "if x.sum() > 0:\n    y = torch.tanh(x).nonzero()\nreturn y\n",
        "`torch.tanh(x).nonzero()` can fault on some data",
    ),
    (
        "FG101",
        "if x.sum() > 0:\n    return x\nelse:\n    y = -x\nreturn y\n",
        "only one branch returns",
    ),
    ("FG101", "if x.sum() > 0 or y.sum() > 0:\n    y = x\nreturn y\n", "combines tensor tests"),
    ("FG101", "if x.sum() > 0:\n    y = [x]\nreturn y\n", "not known to be a tensor"),
    ("FG101", "if x.sum() > 0:\n    return x\n    y = x\nelse:\n    return y\n", "returns early"),
    (
        "FG101",
        "for _ in range(3):\n    if x.sum() > 0:\n        break\nreturn y\n",
        "`break`/`continue`",
    ),
    (
        "FG101",
        "if x.sum() > 0:\n    y.data = x\nreturn y\n",
        "stores to something other than a plain name",
    ),
    ("FG101", "if x.sum() > 0:\n    y = x\ny.mul_(2)\nreturn y\n", "is updated in place later"),
    ("FG101", "while x.norm() > 1:\n    x = x / 2\nreturn x\n", "data-dependent number of times"),
    ("FG101", "return x if x.sum() > 0 else torch.rand_like(x)\n", "random numbers"),
    ("FG101", "return x if x.sum() > 0 else helper(x)\n", "not known to be a tensor"),
    ("FG101", "return x if x > 0 else y\n", "not provably a single value"),
    # FG103: predicated validation
    (
        "FG103",
        "if (x < 0).any():\n    raise ValueError('negative') from None\nreturn x\n",
        "`from` clause",
    ),
    (
        "FG103",
        "if (x < 0).any():\n    raise ValueError('negative', 3)\nreturn x\n",
        "more than one message argument",
    ),
    ("FG103", "assert (x > 0).all(), f'bad {x}'\nreturn x\n", "is computed"),
    (
        "FG103",
        "if x.sum() > 5:\n    y = x\nelif (x < 0).any():\n    raise ValueError('negative')\nreturn y\n",
        "is an `elif`",
    ),
    (
        "FG103",
        "assert torch.equal(x, y), 'differ'\nreturn x\n",
        "Python bool computed from tensor data",
    ),
    (
        "FG103",
        "assert (x > 0).all() and x.sum(), 'bad'\nreturn x\n",
        "not provably a single boolean tensor",
    ),
]


@pytest.mark.parametrize(("code", "body", "reason"), REFUSALS, ids=[r[2] for r in REFUSALS])
def test_refused_fix_names_the_failed_condition(code: str, body: str, reason: str) -> None:
    source = _function(body)
    findings = [f for f in lint_source(source) if f.code == code]
    refused = [f for f in findings if f.refusal_reason and reason in f.refusal_reason]
    assert refused, [f.refusal_reason for f in findings]
    assert all(f.fix is None for f in refused)


def test_submodule_result_is_not_a_proven_tensor() -> None:
    source = (
        "from torch import nn\n\n\nclass M(nn.Module):\n"
        "    def __init__(self, inner):\n        super().__init__()\n        self.inner = inner\n\n"
        "    def forward(self, x):\n        h = self.inner(x)\n"
        "        if h.sum() > 0:\n            h = h * 2\n        return h\n"
    )
    (finding,) = [f for f in lint_source(source) if f.code == "FG101"]
    assert finding.fix is None and "not provably a tensor" in finding.refusal_reason
    assert fix_source(source) == source or "torch.where" not in fix_source(source)


def test_side_effect_in_async_region_is_not_deferred() -> None:
    source = "import torch\n\n\n@torch.compile\nasync def f(x):\n    print(x)\n    return x\n"
    (finding,) = [f for f in lint_source(source) if f.code == "FG102"]
    assert finding.fix is None and "async" in finding.refusal_reason


def test_report_only_rules_never_offer_a_fix() -> None:
    source = _function(
        "n = int(x.sum())\nif n > 0:\n    y = x[x > 0]\nreturn torch.nonzero(y)[:n]\n"
    )
    findings = [f for f in lint_source(source) if f.code in ("FG104", "FG105")]
    assert {f.code for f in findings} == {"FG104", "FG105"}
    assert all(f.fix is None for f in findings)
