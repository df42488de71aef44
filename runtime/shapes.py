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
- a size the program reads is a :class:`SizeInt`: an ``int`` (so the program
  behaves exactly as before) that carries that expression.  It survives
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

import dataclasses
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from fullgraph.runtime import torch_internals
from fullgraph.runtime.sources import Source
from fullgraph.runtime.symbolic import Condition, Sym
from fullgraph.runtime.torch_internals import tree_flatten, tree_unflatten

if TYPE_CHECKING:
    from fullgraph.runtime.run import MonitorRun


# -- size expressions ---------------------------------------------------------
@dataclasses.dataclass(frozen=True, eq=False)
class SizeLeaf:
    """Dimension ``dim`` of the input tensor reached through ``source``."""

    source: Source
    dim: int
    tensor: torch.Tensor

    def text(self) -> str:
        return f"{self.source.expr()}.shape[{self.dim}]"


@dataclasses.dataclass(frozen=True, eq=False)
class SizeOp:
    """``left <symbol> right`` over size expressions and plain ints."""

    symbol: str
    left: Any
    right: Any

    def text(self) -> str:
        return f"({_text(self.left)} {self.symbol} {_text(self.right)})"


SizeExpr = SizeLeaf | SizeOp


@dataclasses.dataclass(frozen=True)
class CalloutResultSource(Source):
    """A tensor a callout returned (``nonzero``, ``x[mask]``), as the mock names it."""

    index: int
    path: tuple = ()

    def expr(self) -> str:
        return f"leaves(c{self.index})[{self.path[0]}]" if self.path else f"c{self.index}"


def _depth(expr: Any) -> int:
    """Index of the latest callout a size expression depends on (-1: only the inputs)."""
    if isinstance(expr, SizeLeaf):
        return expr.source.index if isinstance(expr.source, CalloutResultSource) else -1
    if isinstance(expr, SizeOp):
        return max(_depth(expr.left), _depth(expr.right))
    return -1


_OPERATORS: dict[str, Callable] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "//": operator.floordiv,
    "%": operator.mod,
}


def _text(expr: Any) -> str:
    return expr.text() if isinstance(expr, (SizeLeaf, SizeOp)) else repr(expr)


def evaluate_size(
    expr: Any, leaf: Callable[[SizeLeaf], Any], apply: Callable = lambda fn, a, b: fn(a, b)
) -> Any:
    """``expr`` with each leaf replaced by ``leaf(...)`` and each operator applied by ``apply``."""
    if isinstance(expr, SizeLeaf):
        return leaf(expr)
    if isinstance(expr, SizeOp):
        left = evaluate_size(expr.left, leaf, apply)
        right = evaluate_size(expr.right, leaf, apply)
        return apply(_OPERATORS[expr.symbol], left, right)
    return expr


class SizeSym(Sym):
    """A size expression as a symbolic value for guard conditions."""

    def __init__(self, value: Any, text: str, depth: int = -1):
        self.value = value
        self._text = text
        self.depth = depth  # checked on entry (-1) or right after that callout

    def expr(self) -> str:
        return self._text

    def leaves(self) -> list:
        return []

    def callout_depth(self) -> int:
        return self.depth


# -- sizes the program holds ------------------------------------------------
class SizeInt(int):
    """A tensor size read by the program: an ``int`` that knows where it came from."""

    def __new__(cls, value: int, expr: SizeExpr, tracker: ShapeTracker):
        self = super().__new__(cls, value)
        self.expr = expr
        self.tracker = tracker
        return self

    @property
    def plain(self) -> int:
        return int.__int__(self)

    def _combine(self, other: Any, symbol: str, reflected: bool = False):
        if self.tracker.closed:  # the run is over: an ordinary int from now on
            left, right = (other, self.plain) if reflected else (self.plain, other)
            plain_right = right.plain if isinstance(right, SizeInt) else right
            plain_left = left.plain if isinstance(left, SizeInt) else left
            return _OPERATORS[symbol](plain_left, plain_right)
        if isinstance(other, (str, bytes, bytearray, list, tuple)):
            self.tracker.concretize(self)  # a sequence repeated by the exact count
            return NotImplemented
        if type(other) is bool or not isinstance(other, int):
            if isinstance(other, float):
                value = float(self._exact())
                return _OPERATORS[symbol](*((other, value) if reflected else (value, other)))
            return NotImplemented
        right = other.expr if isinstance(other, SizeInt) else int(other)
        plain_other = other.plain if isinstance(other, SizeInt) else int(other)
        if reflected:
            value = _OPERATORS[symbol](plain_other, self.plain)
            return SizeInt(value, SizeOp(symbol, right, self.expr), self.tracker)
        value = _OPERATORS[symbol](self.plain, plain_other)
        return SizeInt(value, SizeOp(symbol, self.expr, right), self.tracker)

    def __add__(self, other):
        return self._combine(other, "+")

    def __radd__(self, other):
        return self._combine(other, "+", reflected=True)

    def __sub__(self, other):
        return self._combine(other, "-")

    def __rsub__(self, other):
        return self._combine(other, "-", reflected=True)

    def __mul__(self, other):
        return self._combine(other, "*")

    def __rmul__(self, other):
        return self._combine(other, "*", reflected=True)

    def __floordiv__(self, other):
        return self._combine(other, "//")

    def __rfloordiv__(self, other):
        return self._combine(other, "//", reflected=True)

    def __mod__(self, other):
        return self._combine(other, "%")

    def __rmod__(self, other):
        return self._combine(other, "%", reflected=True)

    def __neg__(self):
        return SizeInt(-self.plain, SizeOp("*", self.expr, -1), self.tracker)

    def __pos__(self):
        return self

    def _compare(self, other: Any, symbol: str, compare: Callable):
        if type(other) is bool or not isinstance(other, (int, float)):
            return NotImplemented
        plain_other = other.plain if isinstance(other, SizeInt) else other
        outcome = compare(self.plain, plain_other)
        if self.tracker.closed:
            return outcome
        right = other.expr if isinstance(other, SizeInt) else other
        depth = max(_depth(self.expr), _depth(right))
        self.tracker.condition(f"({self.expr.text()} {symbol} {_text(right)})", outcome, depth)
        return outcome

    def __lt__(self, other):
        return self._compare(other, "<", operator.lt)

    def __le__(self, other):
        return self._compare(other, "<=", operator.le)

    def __gt__(self, other):
        return self._compare(other, ">", operator.gt)

    def __ge__(self, other):
        return self._compare(other, ">=", operator.ge)

    def __eq__(self, other):
        return self._compare(other, "==", operator.eq)

    def __ne__(self, other):
        return self._compare(other, "!=", operator.ne)

    def __bool__(self):
        outcome = self.plain != 0
        if not self.tracker.closed:
            self.tracker.condition(f"({self.expr.text()} != 0)", outcome, _depth(self.expr))
        return outcome

    def __abs__(self):
        return self if self.plain >= 0 else -self

    def __round__(self, ndigits=None):
        return self if ndigits is None else round(self._exact(), ndigits)

    def __trunc__(self):
        return self

    __floor__ = __ceil__ = __trunc__

    # Every other use needs the exact number: the guard checks it from now on.
    def _exact(self) -> int:
        self.tracker.concretize(self)
        return self.plain

    def __hash__(self):
        return hash(self._exact())

    def __index__(self):
        return self._exact()

    def __int__(self):
        return self._exact()

    def __float__(self):
        return float(self._exact())

    def __truediv__(self, other):
        return self._exact() / other

    def __rtruediv__(self, other):
        return other / self._exact()

    def __pow__(self, other, modulo=None):
        return pow(self._exact(), other, modulo)

    def __rpow__(self, other):
        return other ** self._exact()

    def __format__(self, spec):
        return format(self._exact(), spec)

    def __str__(self):
        return str(self._exact())

    def __repr__(self):
        return repr(self._exact())

    def __reduce__(self):
        return (int, (self._exact(),))


def size_sym(value: Any) -> SizeSym | None:
    """A symbolic value for a size, or a ``torch.Size``/tuple/list of sizes (None: holds none)."""
    if not holds_size(value) or not isinstance(value, (SizeInt, tuple, list)):
        return None
    depth = max(_depth(leaf.expr) for leaf in _leaves(value) if isinstance(leaf, SizeInt))
    return SizeSym(plain(value), _build_text(value), depth)


def _build_text(value: Any) -> str:
    """Python text that rebuilds ``value`` with each size re-read from the inputs."""
    if isinstance(value, SizeInt):
        return value.expr.text()
    if isinstance(value, (tuple, list)):
        items = "".join(_build_text(item) + ", " for item in value)
        if isinstance(value, torch.Size):
            return f"torch.Size(({items}))"
        return f"[{items}]" if isinstance(value, list) else f"({items})"
    return repr(value)


def holds_size(value: Any) -> bool:
    """Whether ``value`` (a number, slice, ``torch.Size`` or pytree of them) holds a SizeInt."""
    return any(isinstance(leaf, SizeInt) for leaf in _leaves(value))


def _leaves(value: Any) -> list:
    found = []
    for leaf in tree_flatten(value)[0]:
        if isinstance(leaf, slice):
            found.extend((leaf.start, leaf.stop, leaf.step))
        elif isinstance(leaf, torch.Size):
            found.extend(leaf)
        else:
            found.append(leaf)
    return found


def map_sizes(value: Any, fn: Callable[[SizeInt], Any]) -> Any:
    """``value`` with every SizeInt (also inside slices and ``torch.Size``) replaced by ``fn``."""

    def leaf(item: Any) -> Any:
        if isinstance(item, SizeInt):
            return fn(item)
        if isinstance(item, slice) and holds_size((item.start, item.stop, item.step)):
            return slice(*(leaf(part) for part in (item.start, item.stop, item.step)))
        if isinstance(item, torch.Size) and holds_size(tuple(item)):
            return tuple(leaf(part) for part in item)
        return item

    flat, spec = tree_flatten(value)
    return tree_unflatten([leaf(item) for item in flat], spec)


def plain(value: Any) -> Any:
    """``value`` with sizes as plain ints, for the real call (no guard added)."""
    return map_sizes(value, lambda size: size.plain)


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

    def close(self, result: Any, mutations: list) -> Any:
        """The run is over: sizes left in the program's hands become plain ints.

        Returns ``result`` with its sizes as ints; the sizes the run stored into
        attributes or containers are replaced there too (the same numbers)."""
        self.closed = True
        for mutation in mutations:
            try:
                if mutation.kind == "setattr":
                    value = getattr(mutation.owner, mutation.name)
                    if holds_size(value):
                        setattr(mutation.owner, mutation.name, plain(value))
                elif mutation.kind == "setitem":
                    value = mutation.owner[mutation.name]
                    if holds_size(value):
                        mutation.owner[mutation.name] = plain(value)
            except Exception:  # noqa: BLE001, S112 - the program changed it since; leave it
                continue
        return plain(result) if holds_size(result) else result

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
        operation = torch_internals.size_operation(sympy_expr)
        if operation is None:
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
        for text, depth in facts:
            if text is None:
                self.fail("a size assumption of the fake run cannot be checked in Python")
                return
            self.run._add_condition(
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
                    depths.append(_depth(leaf))
        return max(depths)

    def _render(self, expr: Any) -> str | None:
        """A sympy expression over input sizes as Python text (None: not expressible)."""
        if getattr(expr, "is_Symbol", False):
            leaf = self.symbols.get(expr)
            return leaf.text() if leaf is not None else None
        if getattr(expr, "is_Integer", False) or expr is True or expr is False:
            return repr(int(expr)) if getattr(expr, "is_Integer", False) else repr(bool(expr))
        form = torch_internals.sympy_form(expr)
        if form is None:
            return None
        template, args = form
        parts = [self._render(arg) for arg in args]
        if any(part is None for part in parts):
            return None
        return template(parts)

    # -- what the program did with a size --------------------------------------
    def condition(self, text: str, outcome: bool, depth: int = -1) -> None:
        if self.run.paused or self.closed:
            return  # a callout formatting its argument, not a decision of the program
        self.run._add_condition(
            Condition(SizeSym(outcome, text, depth), "truth", outcome, "the program compared sizes")
        )

    def concretize_all(self, value: Any) -> None:
        """Every size in ``value`` is used for its exact number (e.g. passed to ``range``)."""
        for leaf in _leaves(value):
            if isinstance(leaf, SizeInt) and leaf.tracker is self:
                self.concretize(leaf)

    def concretize(self, size: SizeInt) -> None:
        if self.run.paused or self.closed or self.formatting:
            return
        self.run._add_condition(
            Condition(
                SizeSym(size.plain, size.expr.text(), _depth(size.expr)),
                "equal",
                size.plain,
                "a size the program used as an exact number",
            )
        )


# Callees that keep a size's identity or use it only through its own methods.
_TRANSPARENT_BUILTINS = (isinstance, type, id, len, print, tuple, list, max, min, sum, getattr)
_TRANSPARENT_METHODS = frozenset(
    ["append", "extend", "copy", "count", "index", "get", "setdefault", "update", "add", "format"]
)


def keeps_sizes(fn: Any) -> bool:
    """Whether a callee the monitor doesn't step into may receive sizes as they are:
    torch (which records them into the graph) and builtins that only pass them on.
    Any other native code may read an int's value without calling a method of it
    (``range(s)``, ``random.randint(0, s)``), so its size arguments are pinned."""
    if any(fn is builtin for builtin in _TRANSPARENT_BUILTINS):
        return True
    receiver = getattr(fn, "__self__", None)
    objclass = getattr(fn, "__objclass__", None)  # an unbound method such as Tensor.view
    if isinstance(receiver, torch.Tensor) or (
        isinstance(objclass, type) and issubclass(objclass, torch._C.TensorBase)
    ):
        return True
    if (
        isinstance(receiver, (list, dict, set, str))
        and getattr(fn, "__name__", "") in _TRANSPARENT_METHODS
    ):
        return True
    module = getattr(fn, "__module__", None) or getattr(type(receiver), "__module__", None) or ""
    return module.startswith("torch")


def check_instruction(tracker: ShapeTracker, opname: str, top: Callable[[int], Any]) -> None:
    """Pin the sizes an instruction reads natively: indexing a Python sequence with a
    size, repeating a sequence by one, %-formatting one into a string."""
    if opname == "BINARY_OP":
        # A sequence repeated by a size is caught by SizeInt's own __mul__/__rmul__.
        left, right = top(1), top(0)
        if isinstance(left, (str, bytes, bytearray)) and holds_size(right):
            tracker.concretize_all(right)  # "%d" % s formats the number natively
        return
    if opname not in ("BINARY_SUBSCR", "STORE_SUBSCR", "DELETE_SUBSCR"):
        return
    container, key = top(1), top(0)
    if not isinstance(container, torch.Tensor) and holds_size(key):
        tracker.concretize_all(key)


def _mock_visible(source: Source) -> bool:
    """Sizes are re-read by the guard and the mock, which see the arguments and the module."""
    return source.expr().startswith(("A[", "K[", "M.", "M[", "F."))
