"""Symbolic tensor sizes, for a run whose input sizes vary between calls.

Once a tensor argument has come with two different sizes, the next monitoring
run treats those dimensions as symbols so that one size-generic record (a
graph compiled with dynamic shapes) serves every size.  Python code that
reads sizes (``b, s, _ = x.shape``, ``x.view(x.size(0), -1)``,
``torch.arange(seq_len)``) must then not bake today's numbers into the
record.  Two pieces make that work:

- :class:`ShapeTracker` runs every recorded torch call a second time on fake
  tensors whose varying dimensions are symbols (torch's ``FakeTensorMode``
  over a ``ShapeEnv``), so the size of any tensor the program computes is
  known as an expression over the input sizes;
- a size the program reads is a ``SizeInt`` (:mod:`fullgraph.runtime.symbolic.sizes`):
  an ``int`` (so the program behaves exactly as before) that carries that
  expression.  It survives
  containers by identity (``torch.Size``, tuples, ``*shape``), arithmetic on
  it builds larger expressions, and where it goes decides what happens:

  * into a torch call: the graph computes it from the input's size;
  * into a comparison or ``if``: the guard checks the outcome again;
  * into the record's output or a store: the mock evaluates the expression;
  * anywhere else (``range(s)``, ``f"{s}"``, ``hash(s)``): the guard checks
    its exact value, which is always correct, merely less reusable.

When the fake run cannot follow an operation the tracker gives up and the
run falls back to a record per size, as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from fullgraph.runtime import torch_internals
from fullgraph.runtime.sources import (
    ArgSource,
    KwargSource,
    RootFunctionSource,
    RootModuleSource,
    Source,
    base_of,
)
from fullgraph.runtime.symbolic.scalars import Condition
from fullgraph.runtime.symbolic.sizes import (
    CalloutResultSource,
    SizeInt,
    SizeLeaf,
    SizeOp,
    SizeSym,
    depth_of,
    evaluate_size,
    flat_numbers,
    holds_size,
    map_sizes,
    plain,
)
from fullgraph.runtime.torch_internals import tree_flatten, tree_unflatten

if TYPE_CHECKING:
    from fullgraph.runtime.monitor.run import MonitorRun


# -- the fake run -------------------------------------------------------------
class ShapeTracker:
    """Follows the symbolic sizes of every tensor of one monitoring run."""

    def __init__(self, run: MonitorRun, dynamic: dict[Source, set[int]]):
        self.run = run
        self.dynamic = dynamic
        self.mode = torch_internals.fake_mode_with_symbols()
        self.fakes: dict[int, torch.Tensor] = {}
        self.keepalive: list[Any] = []
        self.symbols: dict[Any, SizeLeaf] = {}  # sympy symbol -> input dimension
        self.failure: str | None = None
        self.closed = False  # set when the run ends: sizes left behind act as plain ints
        self.formatting = False  # an f-string the taint tracking rebuilds is formatting sizes
        self.live = False  # whether the program holds any SizeInt yet

    @property
    def active(self) -> bool:
        return self.failure is None

    def fail(self, why: str) -> None:
        if self.failure is None:
            self.failure = why

    def close(self, result: Any, mutations: list, made: list = ()) -> Any:
        """The run is over: sizes left in the program's hands become plain ints.

        Returns ``result`` with its sizes as ints; the sizes the run stored into
        attributes or containers, and into the attributes of the objects it made
        (``made``: ``Frozen(x.shape[0])``), are replaced there too (the same numbers)."""
        self.closed = True
        for obj in made:
            attributes = getattr(obj, "__dict__", None)
            if isinstance(attributes, dict):
                _plain_items(attributes)
        for mutation in mutations:
            try:
                if mutation.kind == "setattr":
                    value = getattr(mutation.owner, mutation.name)
                    _plain_items(value)  # ``self.lens = {n}``: a set or keys pytrees skip
                    if holds_size(value):
                        setattr(mutation.owner, mutation.name, plain(value))
                elif mutation.kind == "setitem":
                    if isinstance(mutation.owner, dict):
                        _plain_items(mutation.owner)  # its keys too
                    value = mutation.owner[mutation.name]
                    _plain_items(value)
                    if holds_size(value):
                        mutation.owner[mutation.name] = plain(value)
                elif mutation.kind == "call":  # xs.append(n), d.update(...): any item
                    _plain_items(mutation.owner)
                elif mutation.kind == "setglobal":  # ``global LAST; LAST = x.shape[0]``
                    value = mutation.owner.get(mutation.name)
                    _plain_items(value)
                    if holds_size(value):
                        mutation.owner[mutation.name] = plain(value)
            except Exception:  # noqa: BLE001, S112 - the program changed it since; leave it
                continue
        return plain(result) if holds_size(result) else result

    def followed_dims(self) -> dict[Source, set[int]]:
        """The input dimensions whose sizes are symbols (the guard lets only those vary;
        a size that changed but is not followed, as a global tensor's, is a constant)."""
        dims: dict[Source, set[int]] = {}
        for leaf in self.symbols.values():
            if not isinstance(leaf.source, CalloutResultSource):
                dims.setdefault(leaf.source, set()).add(leaf.dim)
        return dims

    # -- fakes --------------------------------------------------------------
    def fake_of(self, tensor: torch.Tensor, source: Source | None) -> torch.Tensor:
        fake = self.fakes.get(id(tensor))
        if fake is not None:
            return fake
        if isinstance(source, CalloutResultSource):
            # Its sizes may change with every call (that is why it is a callout).
            dims = set(range(tensor.dim()))
        else:
            dims = self.dynamic.get(source, set()) if source is not None else set()
            if dims and not _mock_visible(source):
                dims = set()
            # Sizes that varied at another rank (a (3,) argument, then a (2, 3) one),
            # and sizes of 0 or 1, which torch reasons about apart: pinned, as Dynamo's.
            dims = {dim for dim in dims if dim < tensor.dim() and tensor.shape[dim] >= 2}
        fake = torch_internals.fake_from(self.mode, tensor, dims, f"fg{len(self.fakes)}")
        for dim in dims:
            symbol = torch_internals.symbol_of(fake.shape[dim])
            if symbol is not None:
                self.symbols[symbol] = SizeLeaf(source, dim, tensor)
        self.fakes[id(tensor)] = fake
        self.keepalive.append(tensor)
        return fake

    def propagate(self, func, args: tuple, kwargs: dict, result: Any, fake_of) -> None:
        """Run ``func`` on the fakes of its arguments; remember the fakes of its results."""
        if not self.active:
            return
        try:
            flat, spec = tree_flatten((args, kwargs))
            flat = [fake_of(item) if isinstance(item, torch.Tensor) else item for item in flat]
            fake_args, fake_kwargs = map_sizes(tree_unflatten(flat, spec), self.symint)
            with torch_internals.fake_run(self.mode):
                fake_result = func(*fake_args, **fake_kwargs)
        except Exception as error:  # noqa: BLE001 - any failure: sizes are not followed
            self.fail(f"{getattr(func, '__name__', func)}: {type(error).__name__}: {error}"[:200])
            return
        real_leaves, _ = tree_flatten(result)
        fake_leaves, _ = tree_flatten(fake_result)
        if len(real_leaves) != len(fake_leaves):
            self.fail(f"{getattr(func, '__name__', func)} gave a different structure on fakes")
            return
        for real, fake in zip(real_leaves, fake_leaves):
            if isinstance(real, torch.Tensor) and isinstance(fake, torch.Tensor):
                self.fakes[id(real)] = fake
                self.keepalive.append(real)

    def symint(self, size: SizeInt) -> Any:
        """The fake-mode SymInt of a size the program holds."""
        return evaluate_size(size.expr, lambda leaf: self.fakes[id(leaf.tensor)].shape[leaf.dim])

    # -- sizes read by the program -------------------------------------------
    def size_of(self, fake: torch.Tensor, dim: int, value: int) -> int | None:
        """The program's view of ``fake.shape[dim]``: a SizeInt, a plain int, or None (lost)."""
        symbolic = fake.shape[dim]
        if not torch_internals.is_symbolic(symbolic):
            return value
        expr = self._expr(torch_internals.sympy_expr(symbolic))
        if expr is None:
            return None
        self.live = True
        return SizeInt(value, expr, self)

    def _expr(self, sympy_expr: Any) -> Any:
        """A sympy size expression as a SizeExpr over input dimensions (None: not expressible)."""
        if sympy_expr.is_Integer:
            return int(sympy_expr)
        if sympy_expr.is_Symbol:
            return self.symbols.get(sympy_expr)
        operation = torch_internals.sympy_parts(sympy_expr)
        if operation is None or operation[0] not in ("+", "*", "//", "%"):
            return None
        symbol, args = operation
        parts = [self._expr(arg) for arg in args]
        if any(part is None for part in parts):
            return None
        expr = parts[0]
        for part in parts[1:]:
            expr = SizeOp(symbol, expr, part)
        return expr

    # -- what the fake run assumed ----------------------------------------------
    def install_assumptions(self) -> None:
        """Add what the fake run assumed about sizes to the record's entry conditions.

        While following the sizes, torch's ShapeEnv decides some questions by the
        sizes at hand (``s0 == 3`` when a batch of 3 meets 3 channels, ``s0 != 1``
        for broadcasting) and from then on treats the answer as a fact: a symbol may
        even become a constant.  The sizes the program saw were computed under
        those facts, so the record holds only while they hold: each becomes a
        guard condition.  One that cannot be written as Python ends size-generic
        capture for this run."""
        if not self.active:
            return
        env = self.mode.shape_env
        facts = []
        for symbol, value in torch_internals.shape_replacements(env):
            if symbol not in self.symbols:
                continue
            left, right = self._render(symbol), self._render(value)
            text = None if left is None or right is None else f"({left} == {right})"
            facts.append((text, self._fact_depth([symbol, value])))
        for expr in torch_internals.shape_guards(env):
            facts.append((self._render(expr), self._fact_depth([expr])))
        for symbol in self.symbols:
            # torch's meta functions reason about sizes as Dynamo's do, treating 0 and 1
            # apart without a guard (``x[:, 1:]`` is ``s0 - 1`` wide, ``x[:, ::2]`` not
            # contiguous): what they derived holds from 2 up, or from a higher bound.
            lower = max(torch_internals.shape_lower_bound(env, symbol) or 0, 2)
            leaf = self.symbols[symbol]
            if leaf.tensor.shape[leaf.dim] < lower:  # this call's own size is 0 or 1
                self.fail(f"a size of {leaf.tensor.shape[leaf.dim]} is followed apart")
                return
            text = self._render(symbol)
            text = None if text is None else f"({text} >= {lower})"
            facts.append((text, self._fact_depth([symbol])))
        for text, depth in facts:
            if text is None:
                self.fail("a size assumption of the fake run cannot be checked in Python")
                return
            self.run.add_condition(
                Condition(
                    SizeSym(True, text, depth),
                    "truth",
                    True,
                    "size fact the sizes were derived under",
                )
            )

    def _fact_depth(self, exprs: list) -> int:
        depths = [-1]
        for expr in exprs:
            for symbol in getattr(expr, "free_symbols", ()):
                leaf = self.symbols.get(symbol)
                if leaf is not None:
                    depths.append(depth_of(leaf))
        return max(depths)

    def _render(self, expr: Any) -> str | None:
        """A sympy expression over input sizes as Python text (None: not expressible)."""
        if getattr(expr, "is_Symbol", False):
            leaf = self.symbols.get(expr)
            return leaf.text() if leaf is not None else None
        if getattr(expr, "is_Integer", False) or expr is True or expr is False:
            return repr(int(expr)) if getattr(expr, "is_Integer", False) else repr(bool(expr))
        form = torch_internals.sympy_parts(expr)
        if form is None:
            return None
        operator, args = form
        parts = [self._render(arg) for arg in args]
        if any(part is None for part in parts):
            return None
        if operator == "not":
            return f"(not {parts[0]})"
        if operator in ("max", "min"):
            return f"{operator}({', '.join(parts)})"
        return "(" + f" {operator} ".join(parts) + ")"

    # -- what the program did with a size --------------------------------------
    def condition(self, text: str, outcome: bool, depth: int = -1) -> None:
        if self.run.paused or self.closed:
            return  # a callout formatting its argument, not a decision of the program
        self.run.add_condition(
            Condition(SizeSym(outcome, text, depth), "truth", outcome, "the program compared sizes")
        )

    def concretize_all(self, value: Any) -> None:
        """Every size in ``value`` is used for its exact number (e.g. passed to ``range``)."""
        for leaf in flat_numbers(value):
            if isinstance(leaf, SizeInt) and leaf.tracker is self:
                self.concretize(leaf)

    def concretize(self, size: SizeInt) -> None:
        if self.closed or self.run.paused or self.formatting:  # closed: the run is gone
            return
        self.run.add_condition(
            Condition(
                SizeSym(size.plain, size.expr.text(), depth_of(size.expr)),
                "equal",
                size.plain,
                "a size the program used as an exact number",
            )
        )


def _mock_visible(source: Source) -> bool:
    """Sizes are re-read by the guard and the mock, which see the arguments and the module
    (``getattr(M.blocks, '0').k`` included: a ModuleList's layer is named so)."""
    root = source
    while (base := base_of(root)) is not None:
        root = base
    return isinstance(root, (ArgSource, KwargSource, RootModuleSource, RootFunctionSource))


def _plain_items(container: Any) -> None:
    """Replace the sizes a container holds by plain ints, in place."""
    if isinstance(container, list):
        for i, item in enumerate(container):
            if holds_size(item):
                container[i] = plain(item)
    elif isinstance(container, dict):
        if any(holds_size(key) for key in container):
            # ``cache[x.shape[0]] = ...``: the same entries, int keys, in the same order.
            items = [(plain(key), item) for key, item in container.items()]
            container.clear()
            container.update(items)
        for key, item in list(container.items()):
            if holds_size(item):
                container[key] = plain(item)
    elif isinstance(container, set):
        sized = [item for item in container if holds_size(item)]
        for item in sized:
            container.discard(item)
            container.add(plain(item))
