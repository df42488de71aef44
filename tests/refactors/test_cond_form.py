"""FG101's torch.cond form: the facts it relies on, the forms it writes, and every refusal.

The fixtures ``cond_*.py`` under ``tests/refactors/fixtures/`` carry the
end-to-end guarantees (``test_fix_guarantees.py``); here are the facts table
checked against torch, the forms the fixtures do not show (a conditional
expression, a one-armed ``if``, ``return`` in both branches, dropout's random
numbers), and one test per reason the form is refused.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import sys
import textwrap
import types
import warnings
from pathlib import Path

import libcst as cst
import pytest
from refactors_helpers import HAVE_TORCH, needs_runtime, needs_torch

from fullgraph.refactors import fix_source, lint_source
from fullgraph.refactors.analyses import cond_facts

# The facts and the forms are checked by running torch; the refusals need none.
if HAVE_TORCH:
    import torch
    from torch import nn

    DTYPES = [torch.bool, torch.int64, torch.float32, torch.float16, torch.bfloat16]
    FLOATING = {torch.float32, torch.float16, torch.bfloat16}


def _resolve(qualified: str):
    module_name, _, attribute = qualified.rpartition(".")
    return getattr(importlib.import_module(module_name), attribute)


def _samples(dtype: torch.dtype):
    base = (torch.randn(3, 4, generator=torch.Generator().manual_seed(0)) * 3).to(dtype)
    return [base, base.t()]  # contiguous and transposed strides


def _check_preserving(name: str, run, condition: str, aliasing: bool = False) -> None:
    allowed = DTYPES if condition == cond_facts.ANY else FLOATING
    for dtype in allowed:
        for sample in _samples(dtype):
            try:
                result = run(sample)
            except (RuntimeError, NotImplementedError):
                continue  # rejecting a dtype is fine: it raises, it does not differ
            assert (result.dtype, result.shape, result.stride()) == (
                sample.dtype,
                sample.shape,
                sample.stride(),
            ), (name, dtype)
            if not aliasing:
                assert result.data_ptr() != sample.data_ptr(), (name, "returned its input")
    # Autocast does not change the dtype either (the table leaves out float32-autocast ops).
    sample = torch.randn(3, 4)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert run(sample).dtype == torch.float32, name
        assert run(sample.bfloat16()).dtype == torch.bfloat16, name


@needs_torch
@pytest.mark.parametrize("name", sorted(cond_facts.PRESERVING_FUNCTIONS))
def test_preserving_function_keeps_metadata(name: str) -> None:
    function = _resolve(name)
    aliasing = name in cond_facts.ALIASING_FUNCTIONS
    _check_preserving(name, function, cond_facts.PRESERVING_FUNCTIONS[name], aliasing)
    if name == "torch.nn.functional.dropout":
        _check_preserving(name, lambda t: function(t, 0.5, False), cond_facts.ANY, aliasing)


@needs_torch
@pytest.mark.parametrize("name", sorted(cond_facts.PRESERVING_METHODS))
def test_preserving_method_keeps_metadata(name: str) -> None:
    _check_preserving(name, lambda t: getattr(t, name)(), cond_facts.PRESERVING_METHODS[name])


@needs_torch
@pytest.mark.filterwarnings("ignore:dropout")  # Dropout2d/3d on 2-D samples
@pytest.mark.parametrize("name", sorted(cond_facts.PRESERVING_MODULES))
def test_preserving_layer_keeps_metadata(name: str) -> None:
    layer = _resolve(name)()
    aliasing = name in cond_facts.ALIASING_MODULES
    for mode in (layer.train, layer.eval):
        mode()
        _check_preserving(name, layer, cond_facts.PRESERVING_MODULES[name], aliasing)


@needs_torch
@pytest.mark.parametrize(
    "name", sorted(cond_facts.FLOATING_FUNCTIONS | {f".{m}" for m in cond_facts.FLOATING_METHODS})
)
def test_floating_result_whatever_the_input(name: str) -> None:
    for dtype in DTYPES:
        sample = _samples(dtype)[0]
        call = getattr(sample, name[1:]) if name.startswith(".") else None
        try:
            result = call() if call is not None else _resolve(name)(sample)
        except (RuntimeError, NotImplementedError):
            continue
        assert result.dtype.is_floating_point, (name, dtype)


@needs_torch
def test_fresh_layers_return_new_tensors_and_aliasing_ones_may_not() -> None:
    sample = torch.randn(3, 4)
    for name in cond_facts.ALIASING_MODULES - cond_facts.DROPOUT_MODULES:
        if name == "torch.nn.Unflatten":
            continue  # needs constructor arguments; it is a view like Flatten
        assert _resolve(name)()(sample).data_ptr() == sample.data_ptr(), name
    assert nn.Dropout().eval()(sample) is sample


# -- forms, run end to end ------------------------------------------------------------

HEADER = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n\n"
LAYERS = (
    "class M(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.small = nn.Embedding(10, 4)\n"
    "        self.large = nn.Embedding(100, 4)\n"
    "        self.wide = nn.Embedding(100, 8)\n"
    "        self.drop = nn.Dropout(0.5)\n"
    "        self.norm = nn.BatchNorm1d(4)\n"
    "        self.act = nn.ReLU(inplace=True)\n"
    "        self.capped = nn.Embedding(100, 4, max_norm=1.0)\n"
    "        self.block = Block()\n"
    "        self.rnn = nn.LSTM(4, 4)\n"
    "\n"
)
BLOCK = "class Block(nn.Module):\n    def forward(self, x):\n        return x * 2\n\n\n"


def _module(forward: str) -> str:
    body = textwrap.indent(textwrap.dedent(forward), "    ")
    return HEADER + BLOCK + LAYERS + body


def _load(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    sys.modules[name] = module
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)  # noqa: S102 - test code
    return module


def _ids(seed: int) -> torch.Tensor:
    high = 10 if seed % 2 else 100  # both branches run
    return torch.randint(0, high, (3, 5), generator=torch.Generator().manual_seed(seed))


FORMS = {
    "conditional expression": (
        (
            "def forward(self, ids):\n"
            "    h = self.small(ids) if ids.max() < 10 else torch.tanh(self.large(ids)) * 2\n"
            "    return h.sum(-1)\n"
        ),
        "lambda ids: self.small(ids), lambda ids: torch.tanh(self.large(ids)) * 2, (ids,)",
    ),
    "return in both branches": (
        (
            "def forward(self, ids):\n"
            "    if ids.max() < 10:\n"
            "        return self.small(ids)  # in range\n"
            "    else:\n"
            "        h = self.large(ids)\n"
            "        return h.relu()\n"
        ),
        "return torch.cond(ids.max() < 10, true_branch, false_branch, (ids,))",
    ),
    "one-armed if keeps the old value as a copy": (
        (
            "def forward(self, ids):\n"
            "    h = self.large(ids)\n"
            "    if ids.max() < 10:\n"
            "        h = self.small(ids) * 0.5\n"
            "    return h + 1\n"
        ),
        "return h.clone()",
    ),
    "if not swaps the branches": (
        (
            "def forward(self, ids):\n"
            "    if not (ids.max() < 10):\n"
            "        h = self.large(ids)\n"
            "    else:\n"
            "        h = self.small(ids)\n"
            "    return h\n"
        ),
        "def true_branch(ids):\n            return self.small(ids)",
    ),
    "temporaries stay in the branch function": (
        (
            "def forward(self, ids, scale: float):\n"
            "    if ids.max() < 10:\n"
            "        t = self.small(ids)\n"
            "        h = F.silu(t) * scale\n"
            "    else:\n"
            "        h = F.silu(self.large(ids)) * scale\n"
            "    return h\n"
        ),
        "(ids,)",
    ),
}


def _call(module: types.ModuleType, seed: int, forward_args: int):
    torch.manual_seed(0)
    model = module.M()
    args = (_ids(seed), 3.0)[:forward_args]
    return model(*args)


@needs_torch
@pytest.mark.parametrize("form", list(FORMS))
def test_cond_form_keeps_results_and_removes_the_break(form: str) -> None:
    forward, expected_text = FORMS[form]
    source = _module(forward)
    fixed = fix_source(source, codes={"FG101"})
    assert "torch.cond(" in fixed and expected_text in fixed, fixed
    cst.parse_module(fixed)
    assert fix_source(fixed, codes={"FG101"}) == fixed
    original, rewritten = _load(source, "cond_form_original"), _load(fixed, "cond_form_fixed")
    forward_args = 2 if "scale" in forward else 1
    for seed in range(6):
        torch.testing.assert_close(
            _call(original, seed, forward_args), _call(rewritten, seed, forward_args)
        )
    counts = []
    for module in (original, rewritten):
        torch._dynamo.reset()
        torch.manual_seed(0)
        args = (_ids(0), 3.0)[:forward_args]
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            counts.append(torch._dynamo.explain(module.M())(*args).graph_break_count)
    assert counts == [1, 0]


def _runtime_breaks(module: types.ModuleType, forward_args: int) -> int:
    import fullgraph.runtime

    torch.manual_seed(0)
    args = (_ids(0), 3.0)[:forward_args]
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = fullgraph.runtime.explain(module.M(), *args).to_json()
    # A data check in front of the graph still makes one record per value: count it too.
    return sum(1 for found in report["breaks"] + report["data_checks"] if found["code"] == "FG202")


@needs_runtime
@pytest.mark.parametrize("form", list(FORMS))
def test_cond_form_removes_the_runtime_break(form: str) -> None:
    forward, _ = FORMS[form]
    source = _module(forward)
    fixed = fix_source(source, codes={"FG101"})
    forward_args = 2 if "scale" in forward else 1
    original = _load(source, "cond_runtime_original")
    rewritten = _load(fixed, "cond_runtime_fixed")
    before = _runtime_breaks(original, forward_args)
    assert (before, _runtime_breaks(rewritten, forward_args)) == (1, 0)


@needs_torch
def test_dropout_in_training_draws_the_same_random_numbers() -> None:
    source = _module(
        "def forward(self, ids):\n"
        "    if ids.max() < 10:\n"
        "        h = self.drop(self.small(ids))\n"
        "    else:\n"
        "        h = self.large(ids) * 2\n"
        "    return h\n"
    )
    fixed = fix_source(source, codes={"FG101"})
    assert "torch.cond(" in fixed and "self.drop(self.small(ids)).clone()" in fixed, fixed
    original, rewritten = _load(source, "cond_dropout_original"), _load(fixed, "cond_dropout_fixed")
    for seed in range(4):
        results = []
        for module in (original, rewritten):
            torch.manual_seed(0)
            model = module.M().train()
            torch.manual_seed(seed)
            results.append((model(_ids(seed)), torch.rand(1)))
        torch.testing.assert_close(results[0], results[1])


def test_fix_cli_writes_the_cond_form(tmp_path) -> None:
    cli = pytest.importorskip("fullgraph.lsp_server.cli.main")
    (tmp_path / "pyproject.toml").write_text("[tool.fullgraph]\nentrypoints = []\n")
    target = tmp_path / "model.py"
    fixture = Path(__file__).parent / "fixtures" / "cond_multiple_names.py"
    target.write_text(fixture.read_text(encoding="utf-8"), encoding="utf-8")
    expected = fix_source(target.read_text(), str(target))
    cli.main(["fix", "--root", str(tmp_path), str(target)])
    assert target.read_text() == expected
    assert "h, gate = torch.cond(ids.max() < 8, true_branch, false_branch, (ids,))" in expected


# -- refusals -----------------------------------------------------------------------------

BRANCHES = "if ids.max() < 10:\n    {true}\nelse:\n    {false}\nreturn h\n"
REFUSALS = [
    (
        "h = self.small(ids)",
        "h = self.wide(ids)",
        "are not provably of identical shape, dtype and layout",
    ),
    ("h = self.small(ids)", "h = self.large(ids).t()", "are not provably of identical shape"),
    ("h = self.small(ids)", "h = torch.exp(self.large(ids))", "not provably of identical"),
    ("self.cache = self.small(ids)\n    h = ids", "h = ids", "stores to something other"),
    ("print(ids)\n    h = self.small(ids)", "h = self.large(ids)", "expression statement"),
    ("h = self.small(ids) * len(ids)", "h = self.large(ids)", "`len` is called"),
    ("h = self.norm(self.small(ids))", "h = self.large(ids)", "running statistics"),
    ("h = self.act(self.small(ids))", "h = self.large(ids)", "built with `inplace=True`"),
    ("h = self.capped(ids)", "h = self.large(ids)", "built with `max_norm=1.0`"),
    ("h = self.block(self.small(ids))", "h = self.large(ids)", "not a torch.nn layer built once"),
    ("h = self.small(ids).add_(1)", "h = self.large(ids)", "updates a tensor in place"),
    ("h = F.relu(self.small(ids), inplace=True)", "h = self.large(ids)", "in place"),
    ("h = self.small(ids)[ids > 0]", "h = self.large(ids)", "may be a tensor"),
    ("h = self.small(torch.nonzero(ids))", "h = self.large(ids)", "depends on data"),
    ("h = self.small(ids) * ids.sum().item()", "h = self.large(ids)", "reads the tensor's value"),
    ("h = self.small(ids := ids + 1)", "h = self.large(ids)", "not an expression the rule"),
    ("h = self.small(ids)", "h = self.large(ids)\n    h += 1", "updates a value in place"),
    (
        "n = n + 1\n    h = self.small(ids)",
        "h = self.large(ids)",
        "`n` is read and then rebound",
    ),
    ("h = self.small(ids)", "g = self.large(ids)", "`h` is bound only when the condition is true"),
    (
        "h = self.small(ids)\n    k = 1",
        "h = self.large(ids)\n    k = 2",
        "not known to be a tensor",
    ),
    ("h = self.rnn(self.small(ids))", "h = self.large(ids)", "not a layer the rule knows"),
    (
        "torch.manual_seed(0)\n    h = self.small(ids)",
        "h = self.large(ids)",
        "expression statement",
    ),
    ("h = self.small(ids) * torch.manual_seed(0)", "h = self.large(ids)", "outside the graph"),
    ("h = self.small(ids) * torch.equal(ids, ids)", "h = self.large(ids)", "into Python"),
    ("h = torch.relu_(self.small(ids))", "h = self.large(ids)", "updates a tensor in place"),
    ("h = nn.Linear(4, 4)(self.small(ids))", "h = self.large(ids)", "builds a module"),
    ("h = self.small(*[ids])", "h = self.large(ids)", "unpacks arguments"),
    ("h = self.small(ids.nonzero())", "h = self.large(ids)", "depends on data"),
    ("h = self.small(ids) * (not ids)", "h = self.large(ids)", "reads a tensor's value"),
    ("h = self.small(ids) * (ids in ids)", "h = self.large(ids)", "reads a tensor's values"),
    ("h = self.small(ids)\n    h = h.sum()", "h = self.large(ids)", "not provably of identical"),
    (
        "t = g * 1\n    h = self.small(ids)",
        "g = ids.float()\n    h = self.large(ids)",
        "`g` is read by a branch but not bound before the `if`",
    ),
]


def _refusal(forward: str, signature: str = "self, ids, n: int") -> list:
    source = _module(f"def forward({signature}):\n" + textwrap.indent(forward, "    "))
    findings = [f for f in lint_source(source) if f.code == "FG101"]
    return findings


@pytest.mark.parametrize(("true", "false", "reason"), REFUSALS, ids=[r[2] for r in REFUSALS])
def test_refused_cond_form_names_the_failed_condition(true: str, false: str, reason: str) -> None:
    forward = BRANCHES.format(true=true, false=false)
    if "k = " in true:
        forward = forward.replace("return h", "return h, k")
    findings = _refusal(forward)
    assert findings, forward
    reasons = [f.refusal_reason or "" for f in findings]
    assert any(reason in text for text in reasons), reasons
    assert all(f.fix is None for f in findings)


def test_branches_whose_values_are_all_unused_are_refused() -> None:
    findings = _refusal(
        "if ids.max() < 10:\n    t = self.small(ids)\nelse:\n    t = self.large(ids)\nreturn ids\n"
    )
    (finding,) = findings
    assert finding.fix is None
    assert "no value the branches compute is used" in finding.refusal_reason


def test_condition_must_be_a_boolean_tensor() -> None:
    findings = _refusal(
        "if ids.sum():\n    h = self.small(ids)\nelse:\n    h = self.large(ids)\nreturn h\n"
    )
    (finding,) = findings
    assert finding.fix is None and "not provably a boolean tensor" in finding.refusal_reason


def test_copy_of_the_old_value_refused_when_it_is_updated_in_place_later() -> None:
    findings = _refusal(
        "h = self.large(ids)\nif ids.max() < 10:\n    h = self.small(ids)\nh.mul_(2)\nreturn h\n"
    )
    (finding,) = findings
    assert finding.fix is None and "is updated in place later" in finding.refusal_reason


def test_layer_converted_after_construction_has_no_known_metadata() -> None:
    source = _module(
        "def forward(self, ids):\n"
        "    if ids.max() < 10:\n"
        "        h = self.small(ids)\n"
        "    else:\n"
        "        h = self.large(ids)\n"
        "    return h\n"
    ).replace("self.block = Block()\n", "self.block = Block()\n        self.large.half()\n")
    (finding,) = [f for f in lint_source(source) if f.code == "FG101"]
    assert finding.fix is None and "not provably of identical" in finding.refusal_reason


def test_layer_built_in_place_never_runs_untaken() -> None:
    # nn.ReLU is pure by its class, but inplace=True would change `ids` for the other branch.
    findings = _refusal(
        "if ids.max() < 10:\n    h = self.act(ids)\nelse:\n    h = ids * 2\nreturn h\n"
    )
    (finding,) = findings
    assert finding.fix is None and "`self.act(ids)` updates its input in place" in (
        finding.refusal_reason
    )


@pytest.mark.parametrize("form", ["where", "cond"])
def test_comments_of_a_branch_behind_a_static_conjunct_are_kept(form: str) -> None:
    value = "self.small(ids)" if form == "cond" else "ids * 2"
    source = _module(
        "def forward(self, ids):\n"
        "    if self.training and ids.max() < 10:\n"
        "        # the first comment\n"
        f"        h = {value}  # the second comment\n"
        "    else:\n"
        f"        h = {value.replace('small', 'large').replace('2', '3')}\n"
        "    return h\n"
    )
    fixed = fix_source(source, codes={"FG101"})
    assert f"torch.{form}(" in fixed
    assert "# the first comment" in fixed and "# the second comment" in fixed


def test_where_form_is_preferred_when_both_branches_can_run() -> None:
    source = _module(
        "def forward(self, x: torch.Tensor):\n"
        "    if x.sum() > 0:\n"
        "        h = torch.tanh(x)\n"
        "    else:\n"
        "        h = x.relu()\n"
        "    return h\n"
    )
    fixed = fix_source(source, codes={"FG101"})
    assert "torch.where(" in fixed and "torch.cond(" not in fixed


def test_layer_a_subclass_rebuilds_has_no_known_metadata() -> None:
    source = _module(
        "def forward(self, ids):\n"
        "    if ids.max() < 10:\n"
        "        h = self.small(ids)\n"
        "    else:\n"
        "        h = self.large(ids)\n"
        "    return h\n"
    )
    source += (
        "\n\nclass Wider(M):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.large = nn.Embedding(100, 8)\n"
    )
    (finding,) = [f for f in lint_source(source) if f.code == "FG101"]
    assert finding.fix is None and "left alone by its subclasses" in finding.refusal_reason


def test_a_torch_cond_result_is_a_tensor_for_later_rewrites():
    source = (
        "import torch\n\n\n"
        "def f(x):\n"
        "    h = torch.cond(x.mean() > 0, lambda a: a + 1, lambda a: a - 1, (x,))\n"
        "    if h.sum() > 1:\n"
        "        h = h * 3\n"
        "    else:\n"
        "        h = h - 3\n"
        "    return h\n"
    )
    (finding,) = [f for f in lint_source(source) if f.code == "FG101"]
    assert finding.fix is not None, finding.refusal_reason
