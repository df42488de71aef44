"""FG103: ``assert`` or ``if …: raise E("msg")`` on tensor data.

Fix: predicated validation — ``check(condition, E, "msg")`` from
:mod:`fullgraph.refactors.support`, an in-graph ``torch._assert_async`` under
compilation that raises ``E("msg")`` in eager code.
"""

from __future__ import annotations

import libcst as cst

from ..rewrites.predication import is_boolean, is_single_value, not_a_tensor, not_boolean
from ..rule import Invalid, Rule, Valid

CHECK = "fullgraph.refactors.support:check"


class _Refusal(Exception):
    pass


def _literal_message(node: cst.BaseExpression | None, code) -> str | None:
    """The message as source text, if it is a plain string literal (evaluating it is free)."""
    if node is None:
        return None
    if isinstance(node, cst.SimpleString) or (
        isinstance(node, cst.ConcatenatedString)
        and not any(isinstance(p, cst.FormattedString) for p in (node.left, node.right))
    ):
        return code(node)
    raise _Refusal(
        f"the message `{code(node)}` is computed; it would be evaluated on every call instead "
        "of only on failure"
    )


def _wrap(source: str) -> str:
    """Parenthesize ``source`` unless it is already atomic (a call, name, attribute, subscript)."""
    expression = cst.parse_expression(source)
    atomic = isinstance(expression, (cst.Call, cst.Name, cst.Attribute, cst.Subscript))
    return source if atomic or expression.lpar else f"({source})"


def _is_boolean_tensor(node: cst.BaseExpression, types, qualified_names) -> bool:
    if isinstance(node, cst.Comparison):
        return types.is_tensor(node)
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("any", "all"):
            return types.is_tensor(func.value)
        return bool(qualified_names(func) & {"torch.any", "torch.all"})
    return False


class TensorValidationRule(Rule):
    CODE = "FG103"
    NAME = "tensor-validation"
    MESSAGE = "This {construct} checks tensor data (`{condition}`); the graph breaks here."
    WHAT_IT_DOES = (
        'Reports `assert c, "msg"` and `if c: raise E("msg")` (no `else`) whose condition '
        "reads tensor data, and rewrites them into predicated validation: "
        '`check(condition, E, "msg")` from `fullgraph.refactors.support`.'
    )
    WHY_IS_THIS_BAD = (
        "Deciding whether to raise reads the tensor's value in Python, which ends the graph "
        "(runtime code FG202). An asynchronous in-graph assertion "
        "(`torch._assert_async`) checks the same condition without leaving the graph."
    )
    FIX_SAFETY = (
        "Offered when the condition is a tensor, the branch is exactly one `raise` of an "
        "exception called with at most a plain string literal (no `from`), and the `if` "
        "has no `else`/`elif`; an `assert` needs a literal message or none. In eager code "
        "`check` raises the same exception type with the same message. Under compilation "
        "the check runs inside the graph: its failure raises a `RuntimeError` whose message "
        "starts with the original exception's name and message, and it may surface when "
        "the graph's results are next read rather than at the line itself. Unlike "
        "`assert`, the check also runs under `python -O`."
    )
    VALID = (
        Valid(
            "import torch\n\n\n"
            "@torch.compile\n"
            "def f(x: torch.Tensor) -> torch.Tensor:\n"
            "    assert x.dim() == 2, 'expected a matrix'\n"
            "    return x\n"
        ),
        Valid(
            "import torch\n\n\n"
            "@torch.compile\n"
            "def f(x: torch.Tensor, n: int) -> torch.Tensor:\n"
            "    if n < 0:\n"
            "        raise ValueError('n must be positive')\n"
            "    return x * n\n"
        ),
        # Plain Python on sizes: arguments of a layer's constructor, a size read from a
        # tensor, a value used as a size of torch.Tensor(...).
        Valid(
            "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n\n"
            "class Conv(nn.Module):\n"
            "    def __init__(self, channels, kernel_size, padding):\n"
            "        super().__init__()\n"
            "        assert padding == kernel_size // 2, 'same padding only'\n"
            "        self.weight = nn.Parameter(torch.Tensor(channels, channels, kernel_size))\n"
            "        self.padding = padding\n\n"
            "    def forward(self, x, norms, C):\n"
            "        assert norms.size()[1] == C, 'one norm per channel'\n"
            "        return F.conv1d(F.pad(x, (self.padding, self.padding)), self.weight)\n"
        ),
        # Python bools from torch's non-operator namespaces, and a string comparison.
        Valid(
            "import torch\nfrom torch import nn\n\n\n"
            "class Sharded(nn.Module):\n"
            "    def forward(self, x, group):\n"
            "        if not torch.distributed.is_initialized():\n"
            "            raise RuntimeError('call init_process_group first')\n"
            "        if not torch.jit.is_scripting():\n"
            "            raise RuntimeError('script this module')\n"
            "        assert group[0] == 'tpu', 'tpu groups only'\n"
            "        return x\n"
        ),
        # The backward of an autograd Function runs in the autograd engine.
        Valid(
            "import torch\n\n\n"
            "class Checkpointed(torch.autograd.Function):\n"
            "    @staticmethod\n"
            "    def forward(ctx, x):\n"
            "        ctx.save_for_backward(x)\n"
            "        return x * 2\n\n"
            "    @staticmethod\n"
            "    def backward(ctx, grad):\n"
            "        if not torch.autograd._is_checkpoint_valid():\n"
            "            raise RuntimeError('checkpointing is not compatible with .grad()')\n"
            "        assert (grad >= 0).all(), 'negative gradient'\n"
            "        return grad * 2\n"
        ),
    )
    INVALID = (
        Invalid(
            "import torch\n\n\n"
            "@torch.compile\n"
            "def f(x: torch.Tensor) -> torch.Tensor:\n"
            "    if (x < 0).any():\n"
            "        raise ValueError('x must be non-negative')\n"
            "    return x.sqrt()\n",
            expected_replacement=(
                "import torch\n"
                "from fullgraph.refactors.support import check\n\n\n"
                "@torch.compile\n"
                "def f(x: torch.Tensor) -> torch.Tensor:\n"
                "    check(~(x < 0).any(), ValueError, 'x must be non-negative')\n"
                "    return x.sqrt()\n"
            ),
            line=6,
            column=7,
        ),
        Invalid(
            "import torch\n\n\n"
            "@torch.compile\n"
            "def f(x: torch.Tensor) -> torch.Tensor:\n"
            "    assert torch.isfinite(x).all(), 'non-finite input'  # cheap\n"
            "    return x * 2\n",
            expected_replacement=(
                "import torch\n"
                "from fullgraph.refactors.support import check\n\n\n"
                "@torch.compile\n"
                "def f(x: torch.Tensor) -> torch.Tensor:\n"
                "    check(torch.isfinite(x).all(), AssertionError, 'non-finite input')  # cheap\n"
                "    return x * 2\n"
            ),
        ),
        Invalid(
            "import torch\n\n\n"
            "@torch.compile\n"
            "def f(p: torch.Tensor) -> torch.Tensor:\n"
            "    assert (p >= 0).all() and (p <= 1).all(), 'not a probability'\n"
            "    return p.log()\n",
            expected_replacement=(
                "import torch\n"
                "from fullgraph.refactors.support import check\n\n\n"
                "@torch.compile\n"
                "def f(p: torch.Tensor) -> torch.Tensor:\n"
                "    check((p >= 0).all() & (p <= 1).all(), AssertionError, 'not a probability')\n"
                "    return p.log()\n"
            ),
        ),
        Invalid(
            "import torch\n\n\n"
            "@torch.compile\n"
            "def f(x: torch.Tensor) -> torch.Tensor:\n"
            "    if not (x > 0).all():\n"
            "        raise ValueError(f'bad input {x}')\n"
            "    return x.log()\n",
            refusal="is computed",
        ),
        Invalid(
            "import torch\n\n\n"
            "@torch.compile\n"
            "def f(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:\n"
            "    if not torch.equal(a, b):\n"
            "        raise ValueError('a and b differ')\n"
            "    return a\n",
            refusal="Python bool computed from tensor data",
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\n\n"
            "class Tied(nn.Module):\n"
            "    def forward(self, a, b):\n"
            "        assert a.allclose(b), 'weights must be tied'\n"
            "        if not a.equal(b):\n"
            "            raise ValueError('a and b differ')\n"
            "        return a\n",
            refusal="Python bool computed from tensor data",
        ),
        Invalid(
            "import torch\n\n\n"
            "@torch.compile\n"
            "def f(x: torch.Tensor) -> torch.Tensor:\n"
            "    if x.sum():\n"
            "        raise ValueError('x must sum to zero')\n"
            "    return x\n",
            refusal="not provably a boolean tensor",
        ),
    )

    def _types(self, node: cst.CSTNode, *, likely: bool = False):
        function = self.context.tensor_function(node)
        if function is None:
            return None
        # The check evaluates the condition where the statement stood, as it stood: an
        # ``Optional[torch.Tensor]`` argument is a tensor there, or the original raised too.
        return self.context.tensor_types(function, likely=likely, optional=not likely)

    def _tensor_condition(self, node: cst.BaseExpression, types) -> str:
        """Source of a boolean tensor whose truth equals Python's truth test of ``node``."""
        code = self.context.code
        if isinstance(node, cst.BooleanOperation):
            # On single-valued boolean tensors `a and b` tests like `a & b` (`or` like `|`).
            operator = "&" if isinstance(node.operator, cst.And) else "|"
            parts = []
            for part in (node.left, node.right):
                if not (
                    _is_boolean_tensor(part, types, self.context.qualified_names)
                    and is_single_value(part, types, self.context.qualified_names)
                ):
                    raise _Refusal(
                        f"`{code(part)}` is not provably a single boolean tensor, so "
                        f"`{code(node)}` cannot be combined with `{operator}`"
                    )
                parts.append(self._tensor_condition(part, types))
            return " ".join([_wrap(parts[0]), operator, _wrap(parts[1])])
        if not types.is_tensor(node):
            raise _Refusal(not_a_tensor(node, types, code))
        return code(node)

    def _condition_code(self, test: cst.BaseExpression, raises_when_true: bool, types) -> str:
        """The condition that must hold, given the test that decides the raise."""
        if not raises_when_true:
            return self._tensor_condition(test, types)
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return self._tensor_condition(test.expression, types)
        condition = self._tensor_condition(test, types)
        if not is_boolean(test, types, self.context.qualified_names):
            # ``~`` is logical negation only on a bool tensor (on an int it is -n-1).
            raise _Refusal(not_boolean(test, code=self.context.code))
        return f"~{_wrap(condition)}"

    def visit_Assert(self, node: cst.Assert) -> None:
        likely = self._types(node, likely=True)
        if (
            likely is None
            or not likely.decides_on_tensor_data(node.test)
            or likely.value_reads(node.test)
        ):
            return
        types = self._types(node)
        code = self.context.code
        message = self.MESSAGE.format(construct="`assert`", condition=code(node.test))
        try:
            condition = self._condition_code(node.test, False, types)
            text = _literal_message(node.msg, code)
        except _Refusal as refusal:
            self.report(node.test, message, refusal_reason=str(refusal))
            return
        check = self.context.module_reference(CHECK)
        arguments = f"{condition}, AssertionError" + (f", {text}" if text is not None else "")
        replacement = cst.Expr(cst.parse_expression(f"{check}({arguments})"))
        self.report(
            node.test,
            message,
            changes={node: replacement},
            imports=[CHECK],
            fix_title="Check inside the graph (predicated validation)",
        )

    def visit_If(self, node: cst.If) -> None:
        likely = self._types(node, likely=True)
        if likely is None or node.orelse is not None:
            return
        body = node.body.body
        if not (
            len(body) == 1
            and isinstance(body[0], cst.SimpleStatementLine)
            and len(body[0].body) == 1
            and isinstance(body[0].body[0], cst.Raise)
        ):
            return
        if not likely.decides_on_tensor_data(node.test) or likely.value_reads(node.test):
            return
        types = self._types(node)
        parent = self.context.parent(node)
        code = self.context.code
        message = self.MESSAGE.format(construct="`if … raise`", condition=code(node.test))
        try:
            if isinstance(parent, cst.If) and parent.orelse is node:
                raise _Refusal("the `if` is an `elif`; the check would run on every path")
            exception, text = self._raised(body[0].body[0])
            condition = self._condition_code(node.test, True, types)
        except _Refusal as refusal:
            self.report(node.test, message, refusal_reason=str(refusal))
            return
        check = self.context.module_reference(CHECK)
        arguments = f"{condition}, {exception}" + (f", {text}" if text is not None else "")
        statement = cst.parse_statement(f"{check}({arguments})\n")
        statement = statement.with_changes(leading_lines=node.leading_lines)
        self.report(
            node.test,
            message,
            changes={node: statement},
            imports=[CHECK],
            fix_title="Check inside the graph (predicated validation)",
        )

    def _raised(self, statement: cst.Raise) -> tuple[str, str | None]:
        code = self.context.code
        if statement.cause is not None:
            raise _Refusal("the `raise` has a `from` clause, which a check cannot keep")
        exc = statement.exc
        if isinstance(exc, (cst.Name, cst.Attribute)):
            return code(exc), None
        if not isinstance(exc, cst.Call) or not isinstance(exc.func, (cst.Name, cst.Attribute)):
            raise _Refusal('the raised exception is not a plain `E("message")`')
        if len(exc.args) > 1 or any(arg.keyword or arg.star for arg in exc.args):
            raise _Refusal("the exception takes more than one message argument")
        text = _literal_message(exc.args[0].value, code) if exc.args else None
        return code(exc.func), text
