"""The native guard tree accepts exactly the calls its Python rendering accepts.

A record's guard is written once as a list of checks and rendered twice: the
Python function a user prints and the tree of torch's guard managers that
runs (``runtime/record/native_guards.py``).  These tests change one piece of state
at a time (arguments, attributes, containers, globals, hooks, grad mode) and
ask both renderings; they must agree, and the Python one must miss where the
program would compute something else.  The suite-wide parity fixture
(``tests/conftest.py``) checks the same on every call of every other test.
"""

from __future__ import annotations

import types
import warnings

import pytest
import torch
from torch import nn

from fullgraph.runtime import compile as fg_compile
from fullgraph.runtime.record import native_guards

SCALE = 2.0
CONFIG = {"mode": "relu"}


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.register_buffer("offset", torch.zeros(4))
        self.flag = True

    def helper(self, x):
        return x * 2


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([Block(), Block()])
        self.table = {"a": 1.0, "b": 2.0}
        self.items = [1, 2]
        self.level = float("nan")
        self.method = self.blocks[0].helper

    def forward(self, x, scale=None, *, dtype=torch.float32):
        for block in self.blocks:
            if block.flag:
                x = block.fc(x) + block.offset
        if hasattr(self, "extra"):
            x = x + 1
        if "a" in self.table:
            x = x * self.table["a"]
        for key in self.table:
            x = x + len(key)
        x = x * len(self.items)
        if self.level != self.level:
            x = x - 1
        x = self.method(x) * SCALE
        x = self.scaled(x)  # a method looked up on the class (natively: not in __dict__)
        if CONFIG["mode"] == "relu":
            x = torch.relu(x)
        if scale is not None:
            x = x * scale
        return x.to(dtype)

    def scaled(self, x):
        return x * 1.0


def _triple(self, x):
    return x * 3


def _hook(module, args, output):
    return output


def _change(model: Model, name: str):
    """Apply one change; return (args, kwargs, undo)."""
    x = torch.randn(3, 4)
    args, kwargs = (x,), {"scale": 2.0}
    block = model.blocks[0]
    undo = lambda: None
    if name == "fresh input":
        pass
    elif name == "batch size":
        args = (torch.randn(5, 4),)
    elif name == "requires grad":
        args = (x.requires_grad_(),)
    elif name == "dtype":
        args = (x.double(),)
    elif name == "strides":
        args = (torch.randn(4, 3).t(),)
    elif name == "scale value":
        kwargs = {"scale": 3.0}
    elif name == "scale type":
        kwargs = {"scale": 2}
    elif name == "no scale":
        kwargs = {}
    elif name == "extra keyword":
        kwargs = {"scale": 2.0, "dtype": torch.float64}
    elif name == "positional count":
        args = (x, 2.0)
        kwargs = {}
    elif name == "flag":
        block.flag = False
        undo = lambda: setattr(block, "flag", True)
    elif name == "new weight":
        old = block.fc.weight
        block.fc.weight = nn.Parameter(torch.randn(4, 4))
        undo = lambda: setattr(block.fc, "weight", old)
    elif name == "frozen weight":
        block.fc.weight.requires_grad_(False)
        undo = lambda: block.fc.weight.requires_grad_(True)
    elif name == "new layer":
        old = block.fc
        block.fc = nn.Linear(4, 4)
        undo = lambda: setattr(block, "fc", old)
    elif name == "attribute appears":
        model.extra = 1
        undo = lambda: delattr(model, "extra")
    elif name == "dict value":
        model.table["a"] = 3.0
        undo = lambda: model.table.__setitem__("a", 1.0)
    elif name == "dict key removed":
        del model.table["a"]
        undo = lambda: model.table.update({"a": 1.0})
    elif name == "dict key added":
        model.table["c"] = 1.0
        undo = lambda: model.table.pop("c")
    elif name == "list length":
        model.items.append(3)
        undo = model.items.pop
    elif name == "nan becomes a number":
        model.level = 1.0
        undo = lambda: setattr(model, "level", float("nan"))
    elif name == "method":
        model.method = types.MethodType(_triple, model.blocks[0])
        undo = lambda: setattr(model, "method", model.blocks[0].helper)
    elif name == "method shadowed on the instance":
        model.scaled = types.MethodType(_triple, model)
        undo = lambda: delattr(model, "scaled")
    elif name == "method replaced on the class":
        original = Model.scaled
        Model.scaled = _triple
        undo = lambda: setattr(Model, "scaled", original)
    elif name == "global number":
        globals()["SCALE"] = 3.0
        undo = lambda: globals().__setitem__("SCALE", 2.0)
    elif name == "global dict":
        CONFIG["mode"] = "gelu"
        undo = lambda: CONFIG.__setitem__("mode", "relu")
    elif name == "module hook":
        handle = block.fc.register_forward_hook(_hook)
        undo = handle.remove
    elif name == "global hook":
        handle = nn.modules.module.register_module_forward_hook(_hook)
        undo = handle.remove
    else:
        raise AssertionError(name)
    return args, kwargs, undo


CHANGES_THAT_MISS = [
    "batch size",
    "requires grad",
    "dtype",
    "strides",
    "scale type",
    "no scale",
    "extra keyword",
    "positional count",
    "flag",
    "frozen weight",
    "new layer",
    "attribute appears",
    "dict value",
    "dict key removed",
    "dict key added",
    "list length",
    "nan becomes a number",
    "method",
    "method shadowed on the instance",
    "method replaced on the class",
    "global number",
    "global dict",
    "module hook",
    "global hook",
]
CHANGES_THAT_REPLAY = ["fresh input", "new weight"]


@pytest.fixture
def compiled():
    model = Model()
    with torch.no_grad():
        cf = fg_compile(model, backend="eager", eager_check=False)
        cf(torch.randn(3, 4), scale=2.0)
    assert len(cf.records) == 1
    guard = cf.records[0].guard
    assert isinstance(guard, native_guards.ParityGuard)  # the suite runs in parity mode
    return model, cf, guard


@pytest.mark.parametrize("change", CHANGES_THAT_MISS + CHANGES_THAT_REPLAY)
def test_native_and_python_guards_agree_on_each_change(compiled, change):
    model, cf, guard = compiled
    args, kwargs, undo = _change(model, change)
    try:
        with torch.no_grad():
            frame = (args, kwargs, cf.module, cf._root_function())
            python = guard.python(*frame)
            native = guard.native(*frame)
    finally:
        undo()
    assert (python is None) == (change in CHANGES_THAT_MISS), change
    assert (native is None) == (python is None), change
    if python is not None:
        assert all(a is b for a, b in zip(native, python, strict=True))


def test_grad_mode_is_checked_by_both(compiled):
    _, cf, guard = compiled
    frame = ((torch.randn(3, 4),), {"scale": 2.0}, cf.module, cf._root_function())
    with torch.enable_grad():
        assert guard.python(*frame) is None
        assert guard.native(*frame) is None
    with torch.no_grad():
        assert guard.native(*frame) is not None


def test_most_checks_run_natively(compiled):
    """Only checks with no source (grad mode, torch state) or several stay in Python."""
    _, cf, guard = compiled
    record = cf.records[0]
    assert record.native_checks == guard.native.native_checks
    in_python = record.check_count - record.native_checks
    # (grad mode, default dtype, modes, and the global state: autocast on and its dtype
    # per device, inference mode, deterministic algorithms, anomaly mode)
    assert in_python <= 11, (record.check_count, record.native_checks)


def test_aliased_arguments_are_checked_natively():
    def add(a, b):
        return a + b

    cf = fg_compile(add, backend="eager", eager_check=False)
    x = torch.randn(3)
    cf(x, x)
    guard = cf.records[0].guard
    fn = cf._root_function()
    same, different = ((x, x), {}, None, fn), ((x, torch.randn(3)), {}, None, fn)
    assert guard.native(*same) is not None and guard.python(*same) is not None
    assert guard.native(*different) is None and guard.python(*different) is None


def test_sizes_that_vary_are_checked_natively():
    def scale_rows(x):
        return x * x.shape[0]

    cf = fg_compile(scale_rows, backend="eager", eager_check=False)
    for rows in (2, 3, 4):
        cf(torch.randn(rows, 5))
    dynamic = [r for r in cf.records if r.dynamic_shapes]
    assert dynamic, "the size-following record"
    guard, fn = dynamic[0].guard, cf._root_function()
    for x, passes in [
        (torch.randn(7, 5), True),
        (torch.randn(7, 6), False),  # a size the graph was specialized to
        (torch.randn(5, 7).t(), False),  # not contiguous any more
        (torch.randn(7, 5, dtype=torch.float64), False),
    ]:
        frame = ((x,), {}, None, fn)
        assert (guard.python(*frame) is not None) is passes
        assert (guard.native(*frame) is not None) is passes


def test_replays_with_the_native_guard_alone(monkeypatch):
    """Without parity mode the record runs the native guard, and misses monitor again."""
    monkeypatch.setattr(native_guards, "PARITY", False)
    model, eager = Model(), Model()
    eager.load_state_dict(model.state_dict())
    cf = fg_compile(model, backend="eager", eager_check=False)
    with torch.no_grad():
        for step in range(4):
            if step == 2:
                model.blocks[1].flag = eager.blocks[1].flag = False
            x = torch.randn(3, 4)
            torch.testing.assert_close(cf(x, scale=2.0), eager(x, scale=2.0))
    assert all(isinstance(r.guard, native_guards.NativeGuard) for r in cf.records)
    assert cf.stats.monitor_runs == 2 and cf.stats.hits == 2


def test_parity_mode_reports_a_disagreement():
    def python(A, K, M, F):
        return None

    class AlwaysPasses:
        native_checks = 1

        def __call__(self, A, K, M, F):
            return ()

    guard = native_guards.ParityGuard(AlwaysPasses(), python, "planted")
    start = len(native_guards.PARITY_FAILURES)
    with pytest.raises(AssertionError, match="native guard passed"):
        guard((), {}, None, None)
    assert native_guards.PARITY_FAILURES[start:] == [
        "planted: native guard passed, Python guard did not"
    ]
    del native_guards.PARITY_FAILURES[start:]  # planted: not a failure of this test


def test_a_tree_torch_cannot_build_falls_back_to_the_python_guard(monkeypatch):
    def broken(self, label):
        raise TypeError("incompatible function arguments")

    monkeypatch.setattr(native_guards._TreeBuilder, "build", broken)
    cf = fg_compile(lambda x: x + 1, backend="eager", eager_check=False)
    x = torch.randn(2)
    for _ in range(2):
        torch.testing.assert_close(cf(x), x + 1)
    record = cf.records[0]
    assert record.native_checks == 0 and cf.stats.hits == 1
    assert record.guard.__name__ == "guard"  # the compiled Python rendering


def test_guard_source_stays_the_readable_python(compiled):
    _, cf, _ = compiled
    source = cf.records[0].guard_source
    assert source.startswith("def guard(A, K, M, F):")
    assert "torch.is_grad_enabled() is False" in source
    assert "M._modules['blocks']" in source


def test_failed_check_names_the_check_that_missed(compiled):
    """Explanations render the same checks, each failure returning its reason."""
    model, cf, _ = compiled
    record, fn = cf.records[0], cf._root_function()
    with torch.no_grad():
        assert record.failed_check((torch.randn(3, 4),), {"scale": 2.0}, model, fn) is None
        model.blocks[0].flag = False
        why = record.failed_check((torch.randn(3, 4),), {"scale": 2.0}, model, fn)
        model.blocks[0].flag = True
        assert why is not None and why.startswith("value of ") and why.endswith(".flag"), why
        why = record.failed_check((torch.randn(3, 4),), {}, model, fn)
        assert why == "call signature", why


def test_an_inference_tensor_misses_the_native_guard_only_and_monitors_again():
    """The tree's tensor leaf compares dispatch keys: stricter than the Python guard."""

    def double(x):
        return x * 2

    cf = fg_compile(double, backend="eager", eager_check=False)
    cf(torch.randn(3))
    with torch.inference_mode():
        x = torch.randn(3)
    start = len(native_guards.PARITY_STRICTER)
    torch.testing.assert_close(cf(x), x * 2)
    assert native_guards.PARITY_STRICTER[start:], "the tree refused the inference tensor"
    assert cf.stats.monitor_runs == 2 and cf.stats.hits == 0


def test_a_check_that_raises_leaves_torch_function_on(monkeypatch):
    monkeypatch.setattr(native_guards, "PARITY", False)  # the tree alone, as users run it
    # torch's tree turns __torch_function__ off while it checks; a nested tensor's
    # strides raise inside it.  Before, the process was left with it off: every
    # function compiled afterwards fell back ("a tensor whose origin ... could not trace").
    double = fg_compile(lambda x: x * 2, backend="eager")
    for _ in range(2):
        double(torch.ones(3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the nested-tensor API's prototype warning
        nested = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])
    out = double(nested)
    assert torch.equal(out.to_padded_tensor(0.0), (nested * 2).to_padded_tensor(0.0))
    assert torch._C._is_torch_function_enabled()
    inc = fg_compile(lambda x: x + 1, backend="eager")
    for _ in range(3):
        assert torch.equal(inc(torch.ones(3)), torch.full((3,), 2.0))
    assert inc.stats.hits == 2, inc.stats
