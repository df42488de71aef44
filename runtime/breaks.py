"""The catalog of graph-break categories the runtime reports.

A break is structured data, not a string built at the raise site: every
category has a stable code (``FG2xx``; the static rules use ``FG1xx``), a
short title, an explanation and a fix hint.  The codes are part of the report
schema and of the editor diagnostics, so never renumber one; add new ones.
Each code has a documentation page at ``docs/codes/<CODE>.md``.
"""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class BreakCategory:
    code: str
    name: str
    title: str
    explanation: str
    hint: str
    example: str = ""
    use_instead: str = ""


def _category(
    code: str,
    name: str,
    title: str,
    explanation: str,
    hint: str,
    example: str = "",
    use_instead: str = "",
) -> BreakCategory:
    return BreakCategory(code, name, title, explanation, hint, example, use_instead)


PYTHON_SIDE_EFFECT = _category(
    "FG201",
    "python-side-effect",
    "Call with Python-level side effects",
    "The call prints, logs, warns, reads the clock or random state, or does I/O. "
    "It cannot be part of an operator graph, so the graph is split around it and "
    "the call is replayed eagerly on every run. A print, log or warning of plain "
    "values only (strings, numbers, sizes) does not split the graph: it is made "
    "after it, reported under `deferred_effects` as information.",
    "Move the call out of the compiled function, or defer it until after the "
    "forward pass (fullgraph's FG102 fix records it and emits it afterwards).",
    example="def forward(self, x):\n    x = self.conv(x)\n    print(x.shape)  # FG201\n    return self.head(x)",
    use_instead="def forward(self, x):\n    x = self.conv(x)\n    return self.head(x)  # log shapes outside the model, or once at startup",
)
TENSOR_VALUE_READ = _category(
    "FG202",
    "tensor-value-read",
    "Python reads a tensor's data",
    "`.item()`, `bool(t)`, `int(t)`, `.tolist()` or `.numpy()` moves tensor data into "
    "Python. Data changes between batches, so the value cannot be baked into the "
    "graph: the graph is split here and the value is guarded on. When the tensor "
    "comes from the call's inputs through a few pure ops (`mask.all()`), the read "
    "runs as a data check in front of the graph instead: no split, reported under "
    "`data_checks` as information, and still one record per outcome.",
    "Keep the value a tensor: replace `if t.item() > 0:` with `torch.where`, "
    "and Python arithmetic on `.item()` with tensor arithmetic.",
    example="def forward(self, x):\n    h = self.fc(x)\n    if h.mean().item() > 0:  # FG202\n        h = h * 2\n    return h",
    use_instead="def forward(self, x):\n    h = self.fc(x)\n    return torch.where(h.mean() > 0, h * 2, h)",
)
DATA_DEPENDENT_SHAPE = _category(
    "FG203",
    "data-dependent-shape",
    "Size that depends on tensor data, read in Python",
    "`nonzero`, boolean-mask indexing, `masked_select`, `unique` and `torch.where(cond)` "
    "stay in the graph, their output sizes unbacked symbols, while only torch ops use "
    "those sizes. Where Python reads one (`idx.shape[0]`, `len(idx)`, `numel()`, a "
    "loop over the rows) or a later graph takes such a tensor in, the function's "
    "later runs make these ops callouts between graphs (their result sizes followed "
    "as symbols); `bincount`, `pack_padded_sequence` and factories sized by a "
    "tensor's value are callouts always.",
    "Let torch ops consume the sizes (`rows.sum() / mask.sum()` rather than "
    "`/ rows.shape[0]`), or use a fixed-shape formulation: `torch.where(mask, x, 0)` "
    "instead of `x[mask]`.",
    example="def forward(self, x, mask):\n    rows = x[mask]\n    return rows.sum() / rows.shape[0]  # FG203",
    use_instead="def forward(self, x, mask):\n    rows = x[mask]\n    return rows.sum() / mask.sum()",
)
UNKNOWN_NATIVE_CALL = _category(
    "FG204",
    "unknown-native-call",
    "Call into code the monitor cannot see into",
    "The monitor cannot see inside a C function it has no annotation for, nor "
    "inside standard-library Python that reads an object from outside the call "
    "(`os.environ.get`, `copy.copy(cfg)`), so it must assume the call is dynamic: "
    "it is run eagerly on every call and its result is checked.  A random draw "
    "from an explicit `torch.Generator` (`torch.randn(n, generator=g)`) is run the "
    "same way: the generator's state lives outside the graph and advances with "
    "each draw.",
    "If the function is pure, add an annotation for it (one line in "
    "`fullgraph.runtime.monitor.annotation_table`); otherwise move it out of the hot path.",
    example="def forward(self, x):\n    scale = some_c_extension.compute_scale()  # FG204\n    return x * scale",
    use_instead="SCALE = some_c_extension.compute_scale()  # once, outside the compiled function\n\ndef forward(self, x):\n    return x * SCALE",
)
UNSUPPORTED_CONSTRUCT = _category(
    "FG205",
    "unsupported-construct",
    "Python construct the monitor cannot record",
    "The monitor saw bytecode or an object whose effect it cannot reproduce "
    "without the interpreter (for example a generator that escapes the call).",
    "Restructure the code so that the construct stays outside the compiled function.",
    example="def forward(self, x):\n    return MyHandle(x)  # FG205 when MyHandle uses __slots__ and cannot be rebuilt",
    use_instead='def forward(self, x):\n    return {"x": x}  # tuples, lists, dicts, dataclasses and plain objects are rebuilt',
)
EAGER_FALLBACK = _category(
    "FG206",
    "eager-fallback",
    "Function fell back to eager execution",
    "The function kept missing its records (each call needed a new monitoring "
    "run) until the recompile limit was reached; it is monitored no more: its "
    "records still replay the calls they accept, and the other calls run eagerly.",
    "Look at the guard failures in the report: a value that changes on every "
    "call (a counter, a timestamp, a new object) should be made an argument or removed.",
    example="def forward(self, x):\n    return x * time.time()  # a different value on every call: FG206 after 8 records",
    use_instead="def forward(self, x, t: float):\n    return x * t  # a float argument is lifted into the graph",
)
NOT_REUSABLE = _category(
    "FG207",
    "not-reusable",
    "Record cannot be reused safely",
    "Replaying the record could repeat or drop a side effect (for example an "
    "effect that happens before a value the rest of the run depends on), so the "
    "function is monitored again on every call.",
    "Move the side effect after the data-dependent decision, or out of the function.",
    example="def forward(self, h):  # h: an activation that requires grad\n    h.mul_(0.5)  # updates it in place, inside autograd's history ...\n    if h.sum().item() > 0:  # ... before a data-dependent decision: FG207\n        ...",
    use_instead="def forward(self, h):\n    h = h * 0.5  # a new tensor: nothing from outside changes\n    if h.sum().item() > 0:\n        ...",
)

AUTOGRAD_STATE_CALL = _category(
    "FG208",
    "autograd-state-call",
    "Call that runs autograd or changes training state",
    "`loss.backward()`, `torch.autograd.grad`, an optimizer's `step()` / `zero_grad()`, "
    "reading a tensor's `.grad`, or a module method that changes its state (`train()`, "
    "`zero_grad()`, `register_buffer` ...) acts on state outside the operator graph. "
    "The graph is split around the call and the call is replayed eagerly on every run, "
    "so gradients accumulate and optimizers step exactly as in eager.",
    "Compile the model's forward (and the loss) instead of the whole training step: "
    "`compiled = fullgraph.runtime.compile(model)`; keep `backward()` and "
    "`optimizer.step()` outside it.",
    example="def train_step(x, y):\n    opt.zero_grad()  # FG208\n    loss = F.mse_loss(model(x), y)\n    loss.backward()  # FG208\n    opt.step()  # FG208\n    return loss",
    use_instead="compiled_model = fullgraph.runtime.compile(model)\n\ndef train_step(x, y):\n    opt.zero_grad()\n    loss = F.mse_loss(compiled_model(x), y)\n    loss.backward()\n    opt.step()\n    return loss",
)

CUSTOM_AUTOGRAD_FUNCTION = _category(
    "FG209",
    "custom-autograd-function",
    "Custom autograd.Function that could not be captured",
    "`MyFunction.apply(x)` attaches the function's own `backward` to its outputs. When an "
    "input requires grad, fullgraph captures the forward and the backward into the graph "
    "as one node (the compiled backward is the user's). It gives that up when the "
    "forward makes a call that must run eagerly (`.item()`, `print`), uses "
    "`ctx.mark_dirty` where torch's operator can't take it (2.11) or returns a tensor "
    "it did not compute, or when the backward, run "
    "once early on stand-in gradients, would have an effect (a print, a store into an "
    "object from outside, a global) or fails: then the call runs eagerly between graphs "
    "on every call, its outputs keeping the user's backward. Without gradients "
    "(`torch.no_grad()`, inference) the forward is stepped into like any other code.",
    "Keep Python effects out of `backward` (log from the training loop instead) and "
    "`.item()` out of `forward`; on torch 2.11, return a new tensor instead of "
    "`ctx.mark_dirty`.",
    example='class Clamp(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n        return x.clamp(0, 1)\n\n    @staticmethod\n    def backward(ctx, g):\n        print("grad norm", g.norm())  # FG209: an effect in backward\n        return g',
    use_instead="class Clamp(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n        return x.clamp(0, 1)\n\n    @staticmethod\n    def backward(ctx, g):\n        return g  # captured with the forward: one graph",
)

CATEGORIES: dict[str, BreakCategory] = {
    c.code: c
    for c in (
        PYTHON_SIDE_EFFECT,
        TENSOR_VALUE_READ,
        DATA_DEPENDENT_SHAPE,
        UNKNOWN_NATIVE_CALL,
        UNSUPPORTED_CONSTRUCT,
        EAGER_FALLBACK,
        NOT_REUSABLE,
        AUTOGRAD_STATE_CALL,
        CUSTOM_AUTOGRAD_FUNCTION,
    )
}


@dataclasses.dataclass
class StackFrame:
    file: str
    line: int
    column: int
    function: str


@dataclasses.dataclass
class GraphBreak:
    """One graph break, at one source location in user code."""

    category: BreakCategory
    function: str  # the dynamic callee, e.g. "builtins.print" or "Tensor.item"
    file: str
    line: int
    column: int
    end_line: int
    end_column: int
    stack: list[StackFrame]  # outermost first; the last frame is the break site
    detail: str = ""

    @property
    def location(self) -> tuple[str, int, int]:
        return (self.file, self.line, self.column)

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.category.code,
            "category": self.category.name,
            "function": self.function,
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "stack": [dataclasses.asdict(f) for f in self.stack],
            "message": f"{self.category.title}: {self.function}"
            + (f" ({self.detail})" if self.detail else ""),
            "explanation": self.category.explanation,
            "hint": self.category.hint,
        }
