"""Which code counts as compiled, and which values as tensors (the facts every rule builds on)."""

from __future__ import annotations

import textwrap

import pytest

from fullgraph.refactors import lint_source


def _findings(source: str, code: str):
    return [f for f in lint_source(textwrap.dedent(source)) if f.code == code]


def test_a_function_reached_through_an_attribute_is_compiled() -> None:
    source = """
        import torch
        from torch import nn


        def focal_loss(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
            print("loss input", logits.shape)
            return (logits - target).abs().mean()


        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.loss = focal_loss

            def forward(self, x, y):
                return self.loss(x, y)
        """
    (finding,) = _findings(source, "FG102")
    assert finding.severity == "warning"
    assert "called from Head.forward" in finding.message


def test_a_registered_buffer_is_a_tensor_condition() -> None:
    source = """
        import torch
        from torch import nn


        class Codebook(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("initted", torch.tensor(False))
                self.embed = nn.Parameter(torch.zeros(4, 2))

            def forward(self, x):
                if not self.initted:
                    self.embed.data.copy_(x[:4])
                    self.initted.fill_(True)
                return x @ self.embed
        """
    (finding,) = _findings(source, "FG101")
    assert finding.severity == "warning"
    assert finding.fix is None


def test_a_buffer_name_rebound_to_a_flag_is_no_tensor() -> None:
    source = """
        import torch
        from torch import nn


        class Lazy(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("ready", torch.tensor(False))
                self.ready = True

            def forward(self, x):
                if self.ready:
                    x = x * 2
                return x
        """
    assert _findings(source, "FG101") == []


def test_autograd_function_methods_are_left_alone() -> None:
    source = """
        import torch


        class Scale(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                if grad.sum() > 0:
                    grad = grad * 2
                assert (grad > 0).all()
                return grad
        """
    assert [f for f in lint_source(textwrap.dedent(source)) if f.code in ("FG101", "FG103")] == []


@pytest.mark.parametrize(
    "condition",
    [
        "torch.distributed.is_initialized()",
        "torch.jit.is_scripting()",
        "torch.cuda.is_available()",
        "torch.backends.cudnn.enabled",
        "torch.is_grad_enabled()",
        "torch.compiler.is_compiling()",
        "x.is_contiguous()",
        "x.is_cuda",
        "x.size()[1] == 4",
        "x.stride()[0] == 1",
        "x.type() == 'torch.FloatTensor'",
        "x.dtype == torch.float32",
        "torch.get_default_dtype() == torch.float32",
        "torch.result_type(x, 1) == torch.float32",
    ],
)
def test_python_values_from_torch_are_no_tensor_conditions(condition: str) -> None:
    source = f"""
        import torch


        @torch.compile
        def f(x: torch.Tensor) -> torch.Tensor:
            assert {condition}, "message"
            if {condition}:
                x = x * 2
            return x
        """
    assert [f for f in lint_source(textwrap.dedent(source)) if f.code in ("FG101", "FG103")] == []


@pytest.mark.parametrize(
    "condition",
    [
        "torch.isfinite(x).all()",
        "torch.nn.functional.relu(x).sum() > 0",
        "torch.linalg.norm(x) > 1",
        "torch.special.expit(x).mean() > 0.5",
        "torch.where(x > 0, x, -x).sum() > 0",
    ],
)
def test_operators_return_tensors(condition: str) -> None:
    source = f"""
        import torch


        @torch.compile
        def f(x: torch.Tensor) -> torch.Tensor:
            assert {condition}, "message"
            return x
        """
    (finding,) = _findings(source, "FG103")
    assert finding.fix is not None


@pytest.mark.parametrize(
    ("helper", "fixed"),
    [
        ("def scores(self, x):\n        return torch.sigmoid(x)\n", True),
        ("def scores(self, x):\n        return self.cache\n", False),
        (
            (
                "def scores(self, x):\n        if self.training:\n            return x.tolist()\n"
                "        return torch.sigmoid(x)\n"
            ),
            False,
        ),
        ("@property\n    def scores(self):\n        return torch.ones(2)\n", False),
    ],
)
def test_a_method_that_returns_tensors_makes_a_tensor(helper: str, fixed: bool) -> None:
    call = "self.scores(x)" if "property" not in helper else "self.scores"
    source = (
        "import torch\nfrom torch import nn\n\n\nclass Head(nn.Module):\n"
        f"    {helper}\n"
        "    def forward(self, x):\n"
        f"        s = {call}\n"
        "        if s.sum() > 0:\n            y = s * 2\n        else:\n            y = s\n"
        "        return y\n"
    )
    findings = _findings(source, "FG101")
    assert any(f.fix is not None for f in findings) is fixed, findings
