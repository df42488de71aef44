"""FG101's torch.where form keeps gradients, not only values, where the `if` guarded a fault.

``torch.where`` computes both branches; a division by zero, the log or square root
of zero, a fractional power of a negative number in the branch not taken gives the
same forward values but ``0 * inf = NaN`` gradients.  The fix guards those operands
in the untaken branch (the "double where"); these tests run backward through the
original and the fixed code, on inputs that take each branch and make the untaken
side fault, and require equal, finite gradients.
"""

from __future__ import annotations

import textwrap

import pytest
from refactors_helpers import HAVE_TORCH, needs_torch

from fullgraph.refactors import fix_source, lint_source

if HAVE_TORCH:  # the cases build their inputs lazily; the refusals need no torch
    import torch

CASES = {
    # The case seen on real code: a loss normalised by the number of positives.
    "divide by a count": (
        """
        if num_pos.sum() == 0:
            loss = loss - neg_loss
        else:
            loss = loss - (pos_loss + neg_loss) / num_pos
        return loss
        """,
        "loss, pos_loss, neg_loss, num_pos",
        [
            lambda: (torch.rand(3), torch.rand(3), torch.rand(3), torch.zeros(3)),
            lambda: (torch.rand(3), torch.rand(3), torch.rand(3), torch.full((3,), 2.0)),
        ],
    ),
    "normalise unless small": (
        """
        if x.norm() > 1.0:
            x = x / x.norm()
        return x
        """,
        "x",
        [lambda: (torch.zeros(4),), lambda: (torch.full((4,), 3.0),)],
    ),
    "log of positives": (
        """
        if x.min() > 0:
            y = x.log()
        else:
            y = x * 2
        return y
        """,
        "x",
        [lambda: (torch.tensor([0.0, 1.0, 2.0]),), lambda: (torch.tensor([0.5, 1.0]),)],
    ),
    "sqrt and rsqrt": (
        """
        if x.min() > 0:
            y = torch.sqrt(x) + torch.rsqrt(x)
        else:
            y = -x
        return y
        """,
        "x",
        [lambda: (torch.tensor([0.0, -1.0, 4.0]),), lambda: (torch.tensor([1.0, 4.0]),)],
    ),
    "fractional power": (
        """
        if (x > 0).all():
            y = x ** 0.5
        else:
            y = x.abs()
        return y
        """,
        "x",
        [lambda: (torch.tensor([-1.0, 0.0, 2.0]),), lambda: (torch.tensor([1.0, 9.0]),)],
    ),
    "division in the false branch": (
        """
        if (d == 0).any():
            y = x
        else:
            y = torch.div(x, d)
        return y
        """,
        "x, d",
        [
            lambda: (torch.ones(3), torch.tensor([0.0, 1.0, 2.0])),
            lambda: (torch.ones(3), torch.tensor([4.0, 1.0, 2.0])),
        ],
    ),
    "conditional expression": (
        """
        return x.log() if x.min() > 0 else x * 0
        """,
        "x",
        [lambda: (torch.tensor([0.0, 3.0]),), lambda: (torch.tensor([1.0, 3.0]),)],
    ),
}


def _function(body: str, parameters: str) -> str:
    signature = ", ".join(f"{p.strip()}: torch.Tensor" for p in parameters.split(","))
    return (
        "import torch\n\n\n@torch.compile\n"
        f"def f({signature}) -> torch.Tensor:\n" + textwrap.indent(textwrap.dedent(body), "    ")
    )


def _load(source: str):
    # The decorator marks the compiled region for the rules; run the code eagerly.
    namespace: dict = {}
    exec(compile(source.replace("@torch.compile\n", ""), "<case>", "exec"), namespace)  # noqa: S102
    return namespace["f"]


def _gradients(function, inputs):
    leaves = [t.clone().requires_grad_(True) for t in inputs]
    result = function(*leaves)
    result.sum().backward()
    return result.detach(), [leaf.grad for leaf in leaves]


@needs_torch
@pytest.mark.parametrize("name", list(CASES))
def test_fixed_code_has_the_original_gradients(name: str) -> None:
    body, parameters, inputs = CASES[name]
    source = _function(body, parameters)
    fixed = fix_source(source, codes={"FG101"})
    assert "torch.where" in fixed, fixed
    original, rewritten = _load(source), _load(fixed)
    for make in inputs:
        values = make()
        value_a, grads_a = _gradients(original, values)
        value_b, grads_b = _gradients(rewritten, values)
        assert torch.equal(value_a, value_b), (name, fixed)
        for grad_a, grad_b in zip(grads_a, grads_b):
            grad_a = torch.zeros_like(value_a) if grad_a is None else grad_a
            grad_b = torch.zeros_like(value_b) if grad_b is None else grad_b
            assert not grad_b.isnan().any(), (name, fixed, grad_b)
            assert torch.equal(grad_a, grad_b), (name, fixed, grad_a, grad_b)


@needs_torch
def test_the_unguarded_form_would_poison_the_gradient() -> None:
    # What the guard prevents: the single where of the same branches.
    num_pos = torch.zeros(3, requires_grad=True)
    loss, neg = torch.rand(3), torch.rand(3, requires_grad=True)
    torch.where(num_pos.sum() == 0, loss - neg, loss - neg / num_pos).sum().backward()
    assert neg.grad.isnan().all()


@pytest.mark.parametrize(
    "branch",
    ["y = x / n", "y = x * (1 / n)", "y = torch.log(x, out=x)"],
)
def test_an_operand_that_cannot_be_guarded_is_refused(branch: str) -> None:
    source = (
        "import torch\n\n\n@torch.compile\n"
        "def f(x: torch.Tensor, n: int) -> torch.Tensor:\n"
        f"    if x.sum() > 0:\n        {branch}\n    else:\n        y = x\n    return y\n"
    )
    (finding,) = [f for f in lint_source(source) if f.code == "FG101"]
    assert finding.fix is None
    assert "untaken branch could fault or poison gradients" in finding.refusal_reason
