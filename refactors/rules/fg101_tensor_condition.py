"""FG101: an ``if``, conditional expression or ``while`` decides on tensor data.

Fix: predicated control flow, ``torch.where`` (see :mod:`fullgraph.refactors.rewrites.predication`)
or, when a branch must not run untaken, ``torch.cond`` (see
:mod:`fullgraph.refactors.rewrites.cond_form`).
"""

from __future__ import annotations

import libcst as cst

from ..analyses.bindings import assigned_outside, mutated_in_place, names_in, names_outside
from ..rewrites.cond_form import plan_cond
from ..rewrites.placement import comments_in, put_in_place
from ..rewrites.predication import (
    RETURN,
    Branch,
    branch_from_block,
    plan,
    select_expression,
)
from ..rewrites.site import Refusal, RewriteSite, Unspeculatable
from ..rule import Invalid, Rule, Valid


def _conjuncts(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(node, cst.BooleanOperation) and isinstance(node.operator, cst.And):
        return [*_conjuncts(node.left), *_conjuncts(node.right)]
    return [node]


def _only_raises(node: cst.If) -> bool:
    body = node.body.body
    return (
        len(body) == 1
        and isinstance(body[0], cst.SimpleStatementLine)
        and len(body[0].body) == 1
        and isinstance(body[0].body[0], cst.Raise)
    )


class TensorConditionRule(Rule):
    CODE = "FG101"
    NAME = "tensor-condition"
    MESSAGE = "This {construct} decides on tensor data (`{condition}`); the graph breaks here."
    WHAT_IT_DOES = (
        "Reports an `if` statement, a conditional expression (`a if c else b`) or a `while` "
        "loop whose condition is a tensor (a comparison or reduction on a tensor, "
        "`.any()`, `.all()`) or a Python bool computed from tensor data (`torch.equal`). "
        "Where it is proven safe it rewrites the `if` into predicated form: both branches "
        "are computed and `torch.where` selects the result. When a branch calls something "
        "that must not run untaken (an embedding lookup whose index may be out of range, "
        "dropout) it rewrites the `if` into `torch.cond` instead, which runs only the taken "
        "branch: each branch becomes a small function of the tensors it reads."
    )
    WHY_IS_THIS_BAD = (
        "Python decides the branch by reading the tensor's value (`bool(t)`), and tensor "
        "data is only known when the graph runs. The compiler stops the graph at the "
        "condition (runtime code FG202), runs the branch in the interpreter and starts a "
        "new graph, or records one graph per path."
    )
    FIX_SAFETY = (
        "The fix is offered only when every one of these holds, and otherwise the finding "
        "says which one failed: the condition is a tensor that is provably a single boolean "
        "value (`.any()`, `.all()`, or one comparison of reductions such as `.sum()`); the "
        "`if` is two-way (no `elif`) and each branch is plain assignments to names (and "
        "possibly a final `return` in both); names live after the `if` are bound in both "
        "branches, or bound before it, and are tensors; the hoisted statements are "
        "effect-free (no calls other than known torch operations, tensor methods and layers, "
        "no in-place updates, also none by a layer built with `inplace=True`, no random "
        "numbers) and cannot fault when their branch is not "
        "taken (no computed indices, no `inverse`/`gather`/…); no `return`, `raise`, "
        "`break` or `continue` in hoisted code; no selected name is updated in place later "
        "(the selected value is a new tensor, not the object a branch chose). A static first "
        "conjunct "
        "(`if self.training and x.sum() > 0`) stays a Python `if`. `torch.where` "
        "broadcasts both results, so the fix assumes both branches give tensors of one "
        "shape, as a program whose result does not depend on the branch taken does. "
        "`while` loops are reported without a fix. An operation whose untaken side can "
        "leave its domain (a division, `log`, `sqrt`, `rsqrt`, `reciprocal`, a power that is "
        "not a whole number >= 0, `acos`, `asin`, …) has its operand replaced in that branch "
        'by a safe value, `torch.where(condition, operand, 1)` (the "double where"), so '
        "the discarded side stays finite and the gradient is not `0 * inf = NaN`; where the "
        "branch is taken the operand, its value and its gradient are unchanged. Where that "
        "operand is not a tensor (a Python number) the `torch.where` form is refused.\n\n"
        "`torch.cond` is used only where `torch.where` is refused because a branch could "
        "fault or have an effect when not taken, and only when, in addition to the "
        "conditions above on the condition and the shape of the `if`: every call in the "
        "branches is a "
        "torch function, a tensor method or a `torch.nn` layer built in the class that "
        "torch.cond can run (no `print` or other Python side effects, no value reads such "
        "as `.item()`, no in-place updates, no layer built with `inplace=True` or "
        "`max_norm`, no BatchNorm, which updates its running statistics in training, no "
        "operation whose shape depends on data, no tensor used as an index); and both "
        "branches provably return tensors of identical shape, dtype, device, layout and "
        "stride order, because torch.cond rejects anything else. The proof is "
        "conservative: both results come from the same operation on arguments of equal "
        "metadata (two layers built alike count as the same operation, `nn.Embedding(10, "
        "4)` and `nn.Embedding(100, 4)` too), or from operations known to keep their "
        "input's metadata (`relu`, `tanh`, `gelu`, `clone`, dropout, arithmetic with a "
        "number on a floating-point tensor …; not `exp` or `softmax`, whose dtype "
        "changes under autocast), or are a tensor from before the `if` (returned as a "
        "copy, since torch.cond rejects a result that is its input; the fix is then "
        "refused if that name is updated in place later). It assumes that layers built "
        "alike keep the same parameter dtype, as when a model is converted as a whole, and "
        "that the layers the class builds are the instance's (a subclass in another file "
        "is not seen); a layer converted on its own in the class (`self.proj.half()`) or "
        "rebuilt by a subclass in the file is left out of the proof. "
        "The tensors a branch reads become torch.cond's operands; `self`, numbers and "
        "globals are read by the branch functions as before. torch.cond compiles both "
        "branches even in eager mode, so a branch that could never run for the inputs' "
        "shapes and dtypes raises where the original only raised if that branch ran."
    )
    VALID = (
        Valid(
            "import torch\n\n\n"
            "@torch.compile\n"
            "def f(x: torch.Tensor, n: int) -> torch.Tensor:\n"
            "    if x.shape[0] > n:\n"
            "        x = x[:n]\n"
            "    return x\n"
        ),
        Valid(
            "import torch\n\n\n"
            "@torch.compile\n"
            "def f(x: torch.Tensor) -> torch.Tensor:\n"
            "    if x.sum() > 0:  # fullgraph: ignore\n"
            "        x = x * 2\n"
            "    return x\n"
        ),
        # Python values that only look like tensor data: flags from torch's non-operator
        # namespaces, string comparisons, sizes, an autograd Function's backward.
        Valid(
            "import torch\nfrom torch import nn\n\n\n"
            "class Block(nn.Module):\n"
            "    def forward(self, x, group, C):\n"
            "        if torch.jit.is_scripting() or torch.distributed.is_initialized():\n"
            "            x = x * 2\n"
            "        if group[0] == 'tpu':\n"
            "            x = x + 1\n"
            "        if x.size()[1] == C:\n"
            "            x = x.flatten(1)\n"
            "        return x\n\n\n"
            "class Clip(torch.autograd.Function):\n"
            "    @staticmethod\n"
            "    def backward(ctx, grad):\n"
            "        if grad.norm() > 1:\n"
            "            grad = grad / grad.norm()\n"
            "        return grad\n"
        ),
    )
    INVALID = (
        Invalid(
            "import torch\n\n\n"
            "@torch.compile\n"
            "def f(x: torch.Tensor) -> torch.Tensor:\n"
            "    # choose the scale\n"
            "    if x.sum() > 0:\n"
            "        y = x * 2  # double\n"
            "    else:\n"
            "        y = x - 1\n"
            "    return y + 1\n",
            expected_replacement=(
                "import torch\n\n\n"
                "@torch.compile\n"
                "def f(x: torch.Tensor) -> torch.Tensor:\n"
                "    # choose the scale\n"
                "    # double\n"
                "    y = torch.where(x.sum() > 0, x * 2, x - 1)\n"
                "    return y + 1\n"
            ),
            line=7,
            column=7,
        ),
        Invalid(
            "import torch as T\n\n\n"
            "@T.compile\n"
            "def clamp_norm(x: T.Tensor) -> T.Tensor:\n"
            "    if x.norm() > 1.0:\n"
            "        x = x / x.norm()\n"
            "    return x\n",
            expected_replacement=(
                "import torch as T\n\n\n"
                "@T.compile\n"
                "def clamp_norm(x: T.Tensor) -> T.Tensor:\n"
                "    condition = x.norm() > 1.0\n"
                "    x = T.where(condition, x / T.where(condition, x.norm(), 1), x)\n"
                "    return x\n"
            ),
        ),
        # The untaken side divides by zero: its divisor is replaced by 1 there, so the
        # gradient stays finite (the "double where").
        Invalid(
            "import torch\n\n\n"
            "@torch.compile\n"
            "def loss_of(loss: torch.Tensor, pos_loss: torch.Tensor, neg_loss: torch.Tensor,\n"
            "            num_pos: torch.Tensor) -> torch.Tensor:\n"
            "    if num_pos.sum() == 0:\n"
            "        loss = loss - neg_loss\n"
            "    else:\n"
            "        loss = loss - (pos_loss + neg_loss) / num_pos\n"
            "    return loss\n",
            expected_replacement=(
                "import torch\n\n\n"
                "@torch.compile\n"
                "def loss_of(loss: torch.Tensor, pos_loss: torch.Tensor, neg_loss: torch.Tensor,\n"
                "            num_pos: torch.Tensor) -> torch.Tensor:\n"
                "    condition = num_pos.sum() == 0\n"
                "    loss = torch.where(condition, loss - neg_loss, loss - (pos_loss + neg_loss) / "
                "torch.where(condition, 1, num_pos))\n"
                "    return loss\n"
            ),
        ),
        Invalid(
            "import torch\n\n\n"
            "@torch.compile\n"
            "def f(x: torch.Tensor, n: int) -> torch.Tensor:\n"
            "    if x.sum() > 0:\n"
            "        x = x / n\n"
            "    return x\n",
            refusal="is not a tensor that the untaken branch could replace",
        ),
        Invalid(
            "from torch import nn\n\n\n"
            "class Gate(nn.Module):\n"
            "    def forward(self, x):\n"
            "        if self.training and x.mean() > 0:\n"
            "            h = x.relu()\n"
            "            return h * 2\n"
            "        else:\n"
            "            return -x\n",
            expected_replacement=(
                "from torch import nn\n"
                "import torch\n\n\n"
                "class Gate(nn.Module):\n"
                "    def forward(self, x):\n"
                "        if self.training:\n"
                "            condition = x.mean() > 0\n"
                "            h_if_true = x.relu()\n"
                "            return torch.where(condition, h_if_true * 2, -x)\n"
                "        else:\n"
                "            return -x\n"
            ),
        ),
        Invalid(
            "import torch\n\n\n"
            "@torch.compile\n"
            "def f(x: torch.Tensor) -> torch.Tensor:\n"
            "    return x * 2 if (x > 0).all() else torch.zeros_like(x)\n",
            expected_replacement=(
                "import torch\n\n\n"
                "@torch.compile\n"
                "def f(x: torch.Tensor) -> torch.Tensor:\n"
                "    return torch.where((x > 0).all(), x * 2, torch.zeros_like(x))\n"
            ),
        ),
        Invalid(
            "from torch import nn\n\n\n"
            "class TwoTables(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.small = nn.Embedding(10, 4)\n"
            "        self.large = nn.Embedding(100, 4)\n\n"
            "    def forward(self, ids):\n"
            "        h = ids.float()\n"
            "        # only ids below 10 have a row in the small table\n"
            "        if ids.max() < 10:\n"
            "            h = self.small(ids)\n"
            "        else:\n"
            "            h = self.large(ids) * 2  # rare ids weigh more\n"
            "        return h.sum(-1)\n",
            expected_replacement=(
                "from torch import nn\n"
                "import torch\n\n\n"
                "class TwoTables(nn.Module):\n"
                "    def __init__(self):\n"
                "        super().__init__()\n"
                "        self.small = nn.Embedding(10, 4)\n"
                "        self.large = nn.Embedding(100, 4)\n\n"
                "    def forward(self, ids):\n"
                "        h = ids.float()\n\n"
                "        # only ids below 10 have a row in the small table\n"
                "        def true_branch(ids):\n"
                "            return self.small(ids)\n\n"
                "        def false_branch(ids):\n"
                "            return self.large(ids) * 2  # rare ids weigh more\n\n"
                "        h = torch.cond(ids.max() < 10, true_branch, false_branch, (ids,))\n"
                "        return h.sum(-1)\n"
            ),
            line=13,
            column=11,
        ),
        Invalid(
            "import torch\n"
            "from torch import nn\n\n\n"
            "class Pick(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.emb = nn.Embedding(10, 4)\n"
            "        self.drop = nn.Dropout(0.1)\n\n"
            "    def forward(self, ids, x):\n"
            "        return self.drop(self.emb(ids)) if ids.max() < 10 else torch.tanh(x)\n",
            refusal="are not provably of identical shape, dtype and layout",
        ),
        Invalid(
            "import torch\n"
            "from torch import nn\n\n\n"
            "class Pick(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.small = nn.Embedding(10, 4)\n"
            "        self.large = nn.Embedding(100, 4)\n\n"
            "    def forward(self, ids):\n"
            "        return self.small(ids) if ids.max() < 10 else self.large(ids).relu()\n",
            expected_replacement=(
                "import torch\n"
                "from torch import nn\n\n\n"
                "class Pick(nn.Module):\n"
                "    def __init__(self):\n"
                "        super().__init__()\n"
                "        self.small = nn.Embedding(10, 4)\n"
                "        self.large = nn.Embedding(100, 4)\n\n"
                "    def forward(self, ids):\n"
                "        return torch.cond(ids.max() < 10, lambda ids: self.small(ids), "
                "lambda ids: self.large(ids).relu(), (ids,))\n"
            ),
        ),
        Invalid(
            "import torch\n\n\n"
            "@torch.compile\n"
            "def f(x: torch.Tensor) -> torch.Tensor:\n"
            "    if x.sum() > 0:\n"
            "        y = x\n"
            "    elif x.sum() < -1:\n"
            "        y = -x\n"
            "    else:\n"
            "        y = x * 0\n"
            "    return y\n",
            refusal="elif",
        ),
        Invalid(
            "import torch\n\n\n"
            "@torch.compile\n"
            "def f(x: torch.Tensor) -> torch.Tensor:\n"
            "    while x.norm() > 1:\n"
            "        x = x / 2\n"
            "    return x\n",
            refusal="`while` loop",
        ),
    )

    # -- if statements ---------------------------------------------------------

    def visit_If(self, node: cst.If) -> None:
        function = self.context.tensor_function(node)
        if function is None:
            return
        likely = self.context.tensor_types(function, likely=True)
        if not likely.decides_on_tensor_data(node.test) or likely.value_reads(node.test):
            return  # FG104 reports value reads such as `.item()`
        if node.orelse is None and _only_raises(node):
            return  # FG103 (predicated validation) owns `if c: raise …`
        message = self.MESSAGE.format(construct="`if`", condition=self.context.code(node.test))
        try:
            replacement, title = self._predicate(node, function, likely)
        except Refusal as refusal:
            self.report(node.test, message, refusal_reason=str(refusal))
            return
        self.report(
            node.test, message, changes={node: replacement}, imports=["torch"], fix_title=title
        )

    def _predicate(
        self, node: cst.If, function: cst.FunctionDef, likely
    ) -> tuple[cst.CSTNode | cst.FlattenSentinel, str]:
        # Which part of the test is about tensors is judged generously (``likely``);
        # the rewrite itself is planned on the strict kinds only.
        types = self.context.tensor_types(function)
        parent = self.context.parent(node)
        if isinstance(parent, cst.If) and parent.orelse is node:
            raise Refusal("the `if` is an `elif` of another `if`; only two-way `if` is rewritten")
        if isinstance(node.orelse, cst.If):
            raise Refusal("the `if` has an `elif`; only a two-way `if`/`else` is rewritten")
        conjuncts = _conjuncts(node.test)
        tensor_parts = [i for i, c in enumerate(conjuncts) if likely.decides_on_tensor_data(c)]
        if tensor_parts != [len(conjuncts) - 1]:
            raise Refusal(
                "the condition combines tensor tests with `and`/`or`; only a static first "
                "conjunct can stay a Python `if`"
            )
        static, condition = conjuncts[:-1], conjuncts[-1]
        if isinstance(condition, cst.BooleanOperation):
            raise Refusal(
                "the condition combines tensor tests with `and`/`or`; only a static first "
                "conjunct can stay a Python `if`"
            )
        then_block = node.body
        else_block = node.orelse.body if isinstance(node.orelse, cst.Else) else None
        if isinstance(condition, cst.UnaryOperation) and isinstance(condition.operator, cst.Not):
            # `if not c: A else: B` selects like `if c: B else: A` (a missing arm keeps values).
            condition, then_block, else_block = condition.expression, else_block, then_block
            condition = condition.with_changes(lpar=(), rpar=())
        then = branch_from_block(then_block, "true") if then_block is not None else Branch([])
        otherwise = branch_from_block(else_block, "false") if else_block is not None else None
        site = RewriteSite(
            types,
            self.context.qualified_names,
            self.context.code,
            live=names_outside(function, node) | names_in(node.test),
            defined_before=assigned_outside(function, node) | set(types.parameters),
            # The module's names are the same for every `if`: the context collects them once.
            taken_names=names_in(function) | self.context.module_names(),
            layers=self.context.class_layers(function),
        )
        try:
            torch = self.context.module_reference("torch")
            layout = plan(condition, then, otherwise, site, torch=torch)
        except Unspeculatable as unspeculatable:
            # torch.where would run the branch untaken; torch.cond runs only the taken one.
            try:
                cond = plan_cond(condition, then, otherwise, site)
            except Refusal as refusal:
                raise Refusal(
                    f"{unspeculatable}; torch.cond, which runs only the taken branch, is not "
                    f"proven safe either: {refusal}"
                ) from None
            self._check_not_mutated(function, cond.copied)
            statements = cond.statements(self.context.module_reference("torch"))
            kept = {
                id(line.comment)
                for body in (cond.true_body, cond.false_body)
                for statement in body
                for line in comments_in(statement)
            }
            title = "Run only the taken branch with torch.cond"
        else:
            # torch.where returns a new tensor where the original kept the very same object
            # (``if c: y = x``, or the old value of a one-armed ``if``).
            self._check_not_mutated(function, {target for target, _, _ in layout.selects})
            statements = layout.statements(torch)
            kept = set()
            title = "Compute both branches and select with torch.where"
        return put_in_place(node, statements, static, kept, self.context.parent(node)), title

    def _check_not_mutated(self, function: cst.FunctionDef, names: set[str]) -> None:
        # A later in-place update would no longer reach the tensor the caller holds.
        mutated = mutated_in_place(function) & names
        if mutated:
            listed = ", ".join(f"`{name}`" for name in sorted(mutated))
            raise Refusal(
                f"{listed} is updated in place later in the function; after the rewrite it "
                "would be a new tensor instead of the one the branch chose"
            )

    # -- conditional expressions -----------------------------------------------

    def visit_IfExp(self, node: cst.IfExp) -> None:
        function = self.context.tensor_function(node)
        if function is None:
            return
        likely = self.context.tensor_types(function, likely=True)
        if not likely.decides_on_tensor_data(node.test) or likely.value_reads(node.test):
            return
        types = self.context.tensor_types(function)
        code = self.context.code
        message = self.MESSAGE.format(construct="conditional expression", condition=code(node.test))
        torch = self.context.module_reference("torch")
        site = RewriteSite(
            types,
            self.context.qualified_names,
            code,
            live=set(),
            # An expression binds nothing: every local it reads is bound elsewhere.
            defined_before=set(types.assigned) | set(types.parameters),
            taken_names=set(),
            layers=self.context.class_layers(function),
        )
        try:
            select = select_expression(node, site, torch)
            title = "Select with torch.where"
        except Unspeculatable as unspeculatable:
            try:
                cond = plan_cond(
                    node.test, Branch([(RETURN, node.body)]), Branch([(RETURN, node.orelse)]), site
                )
            except Refusal as refusal:
                reason = (
                    f"{unspeculatable}; torch.cond, which runs only the taken branch, is not "
                    f"proven safe either: {refusal}"
                )
                self.report(node.test, message, refusal_reason=reason)
                return
            select = cond.expression(torch, code)
            title = "Run only the taken branch with torch.cond"
        except Refusal as refusal:
            self.report(node.test, message, refusal_reason=str(refusal))
            return
        self.report(node.test, message, changes={node: select}, imports=["torch"], fix_title=title)

    # -- while loops -----------------------------------------------------------

    def visit_While(self, node: cst.While) -> None:
        function = self.context.tensor_function(node)
        if function is None:
            return
        types = self.context.tensor_types(function, likely=True)
        if not types.decides_on_tensor_data(node.test) or types.value_reads(node.test):
            return
        self.report(
            node.test,
            self.MESSAGE.format(construct="`while` loop", condition=self.context.code(node.test)),
            refusal_reason=(
                "a `while` loop on tensor data runs a data-dependent number of times; it cannot "
                "be predicated (bound the loop and mask the update with torch.where)"
            ),
        )
