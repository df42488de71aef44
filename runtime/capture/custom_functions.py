"""Custom ``torch.autograd.Function`` calls: one graph node that keeps the user's backward.

``MyFunction.apply(x, k)`` while ``x`` requires grad attaches the user's own
``backward`` to the outputs.  The monitor swaps the call for
:func:`capture_custom_function`, which, as Dynamo's autograd.Function support
does,

1. steps into ``forward`` under ``torch.no_grad()`` (as ``apply`` runs it) with a
   stand-in ``ctx`` (:class:`FunctionContext`), its torch calls on a tape of
   their own: what it reads is guarded like any other read;
2. runs ``backward`` once, early, on stand-in gradients, again on its own tape.
   That run is *speculative* (``monitor/speculation.py``): eager runs backward
   only when the program calls ``loss.backward()``, so any effect it tries
   (a print, a store into an object from before it) is blocked and the
   capture given up;
3. emits Dynamo's ``autograd_function_apply(fwd_body, bwd_body, *operands)``
   into the current segment, whose operands are the call's tensors plus every
   outside tensor either body reads; the forward body returns the outputs and
   what the backward body needs (saved tensors, ``ctx`` attributes), the
   backward body one gradient per operand.  AOTAutograd traces the user's
   backward into the compiled backward graph.

The program goes on with outputs of that operator run once on the real
tensors (the RNG is put back first, so random ops draw what eager draws).
When something can't be captured (a callout in forward, an effect or an
error in backward, ``ctx.mark_dirty``, outputs that aren't fresh tensors),
the outputs the forward gave get the user's backward attached
(:class:`_EagerBackward`, what ``apply`` itself does), the run is refused with
the reason, and later monitoring runs of that Function replay the call as a
callout (FG209), as before.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import operator
import types
import weakref
from typing import TYPE_CHECKING, Any

import torch
import torch.fx

from fullgraph.runtime import breaks, torch_internals
from fullgraph.runtime.capture.higher_order import BranchTape, FreeOrigin, unobserved
from fullgraph.runtime.capture.origins import NodeOrigin
from fullgraph.runtime.capture.segments import Unsupported
from fullgraph.runtime.monitor.speculation import SpeculationBlocked
from fullgraph.runtime.monitor.user_code import is_user_code
from fullgraph.runtime.sources import AttrSource

if TYPE_CHECKING:
    from fullgraph.runtime.monitor.run import MonitorRun

# Function classes whose capture failed once, with why: replayed as a callout from then on.
_NOT_CAPTURED: weakref.WeakKeyDictionary[type, str] = weakref.WeakKeyDictionary()


class FunctionContext:
    """The ``ctx`` forward and backward get while the monitor captures them.

    It records what autograd's own ctx would be told; the user's attributes
    (``ctx.k = k``) are plain attributes.  Its own state has ``_fg_`` names so
    that no user attribute collides with it.
    """

    def __init__(self, needs_input_grad: tuple[bool, ...]):
        self.needs_input_grad = needs_input_grad
        self._fg_saved: tuple = ()
        self._fg_non_differentiable: tuple = ()
        self._fg_dirty: tuple = ()
        self._fg_materialize_grads = True
        self._fg_unsupported: str | None = None
        self._fg_inputs_before: dict | None = None  # copies of the inputs, for mark_dirty

    def save_for_backward(self, *tensors: Any) -> None:
        self._fg_saved = tensors

    def save_for_forward(self, *tensors: Any) -> None:
        self._fg_unsupported = "ctx.save_for_forward (forward-mode AD)"

    def mark_dirty(self, *tensors: Any) -> None:
        self._fg_dirty = tensors

    def mark_non_differentiable(self, *tensors: Any) -> None:
        self._fg_non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        self._fg_materialize_grads = bool(value)

    @property
    def saved_tensors(self) -> tuple:
        return tuple(self._fg_saved)

    saved_variables = saved_tensors  # the deprecated name


def is_context_method(fn: Any) -> bool:
    """``ctx.save_for_backward`` and friends, called on the stand-in ctx."""
    return isinstance(getattr(fn, "__self__", None), FunctionContext)


def _function_class(fn: Any, args: tuple) -> type:
    """The Function subclass of an ``apply`` call (bound, or ``Function.apply(C, ...)``)."""
    owner = getattr(fn, "__self__", None)
    return owner if owner is not None else args[0]


def capture_for(run: MonitorRun, fn: Any, args: tuple) -> Any:
    """What the monitor puts on the stack in place of ``fn`` (an ``apply``)."""
    # ``Function.apply(C, x)`` has the class among the arguments: dropped.
    class_in_args = getattr(fn, "__self__", None) is None
    return functools.partial(capture_custom_function, run, _function_class(fn, args), class_in_args)


def _uses_setup_context(cls: type) -> bool:
    return cls.setup_context is not torch.autograd.Function.setup_context


def capturable(fn: Any, args: tuple, kwargs: dict) -> bool:
    """Whether the monitor tries to put this ``apply``'s forward and backward into the
    graph: both are the program's own Python, and no earlier try failed."""
    cls = _function_class(fn, args)
    if kwargs or cls in _NOT_CAPTURED or torch_internals.autograd_function_apply_op() is None:
        return False
    backward = inspect.unwrap(cls.backward)  # @once_differentiable wraps it
    if cls.backward is torch.autograd.Function.backward:
        return False  # eager raises when gradients flow back: its own error, as a callout
    functions = [cls.forward, backward]
    if _uses_setup_context(cls):
        functions.append(cls.setup_context)
    return all(isinstance(f, types.FunctionType) and is_user_code(f.__code__) for f in functions)


@dataclasses.dataclass
class _Body:
    """One captured body (forward or backward): its tape and what it returned."""

    tape: BranchTape
    result: Any = None  # what the body returned
    outputs: tuple = ()  # the same as a tuple
    problem: str | None = None


class _RngState:
    """The generators a capture may draw from, to put back between its runs."""

    def __init__(self):
        self.cpu = torch.random.get_rng_state()
        self.cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None

    def restore(self) -> None:
        torch.random.set_rng_state(self.cpu)
        if self.cuda is not None:
            torch.cuda.set_rng_state_all(self.cuda)


def capture_custom_function(run: MonitorRun, cls: type, class_in_args: bool, *args: Any):
    """Stands in for ``cls.apply(*args)`` during a monitoring run."""
    if class_in_args:
        args = args[1:]
    tracker = run.tape.shapes
    if tracker is not None and tracker.active:
        # The bodies are captured for today's sizes: one record per size.
        tracker.fail(f"{cls.__qualname__}.apply is captured for fixed sizes")
    _read_methods(run, cls)
    ctx = FunctionContext(tuple(isinstance(a, torch.Tensor) and a.requires_grad for a in args))
    run.keepalive.append(ctx)
    with unobserved(run):
        before = _RngState()
        # forward runs twice (captured, then as the operator): an input it may update in
        # place (ctx.mark_dirty) is put back in between.
        ctx._fg_inputs_before = _inputs_before(cls, args)
    forward = _run_forward(run, cls, ctx, args)  # the user's own error reaches the program
    with unobserved(run):
        after_forward = _RngState()
    problem, backward = forward.problem, None
    if problem is None:
        backward = _run_backward(run, cls, ctx, args, forward.outputs)
        problem = backward.problem
    if problem is None:
        with unobserved(run):
            before.restore()  # the operator runs forward again: it draws what eager draws
        try:
            return _emit(run, cls, ctx, args, forward, backward)
        except Unsupported as error:
            problem = error.detail
        except Exception as error:  # noqa: BLE001 - a fullgraph bug: the program goes on
            problem = f"internal error in fullgraph's capture: {error!r}"
    with unobserved(run):
        after_forward.restore()
    _NOT_CAPTURED[cls] = problem
    # The next monitoring run replays the call instead (FG209), and can be recorded.
    run.not_recordable.append(f"{cls.__qualname__}.apply not captured into the graph: {problem}")
    with unobserved(run):
        value = _EagerBackward.attach(cls, ctx, args, forward.result)
    try:  # what the rest of this run computes from the outputs stays traceable
        run.tape.record_callout(
            cls.apply,
            f"{cls.__qualname__}.apply",
            args,
            {},
            value,
            breaks.CUSTOM_AUTOGRAD_FUNCTION,
            effectful=False,
            guard_result=True,
        )
    except Unsupported as error:
        run.tape.unsupported = run.tape.unsupported or error
    return value


def _read_methods(run: MonitorRun, cls: type) -> None:
    """The capture calls the class's methods itself: a replaced ``forward`` or
    ``backward`` (``MyFunction.backward = other``) is another call."""
    source = run.source_of(cls)
    if source is None:
        return  # a class the function made: nothing from outside to change
    for name in ("forward", "backward", "setup_context"):
        run.read(AttrSource(source, name), getattr(cls, name), symbolic=False)


def _inputs_before(cls: type, args: tuple) -> dict | None:
    """Copies of the tensor arguments (by id) when forward's code marks an input dirty."""
    codes = [cls.forward.__code__]
    if _uses_setup_context(cls):
        codes.append(cls.setup_context.__code__)
    if not any("mark_dirty" in code.co_names for code in codes):
        return None
    with torch.no_grad():
        return {id(a): a.clone() for a in args if isinstance(a, torch.Tensor)}


def _run_forward(run: MonitorRun, cls: type, ctx: FunctionContext, args: tuple) -> _Body:
    with torch.no_grad():  # as apply runs it; the tape starts in that mode too
        body = _Body(BranchTape(run, [a for a in args if isinstance(a, torch.Tensor)]))
        outer, run.tape = run.tape, body.tape
        try:
            if _uses_setup_context(cls):
                result = cls.forward(*args)
                cls.setup_context(ctx, args, result)
            else:
                result = cls.forward(ctx, *args)
        finally:
            run.tape = outer
            outer.keepalive.append(body.tape.keepalive)
    body.result = result
    body.outputs = result if isinstance(result, tuple) else (result,)
    body.problem = _forward_problem(ctx, args, body) or _body_problem(
        "forward", body.tape, ctx._fg_dirty
    )
    return body


def _forward_problem(ctx: FunctionContext, args: tuple, body: _Body) -> str | None:
    if ctx._fg_unsupported is not None:
        return ctx._fg_unsupported
    if ctx._fg_dirty:
        if not torch_internals.autograd_function_apply_marks_dirty():
            return "ctx.mark_dirty (this torch's autograd_function_apply has no dirty_idx)"
        if ctx._fg_inputs_before is None:
            return "ctx.mark_dirty called outside forward's own code"
        for tensor in ctx._fg_dirty:
            if not any(tensor is a for a in args) or not any(tensor is o for o in body.outputs):
                return "ctx.mark_dirty of a tensor that is not both an input and an output"
    if not body.outputs or not all(isinstance(o, torch.Tensor) for o in body.outputs):
        return "forward must return a tensor or a tuple of tensors"
    for output in body.outputs:
        if not isinstance(body.tape.producer.get(id(output)), NodeOrigin):
            return "forward returns a tensor it did not compute (an input or an outside tensor)"
    return None


def _body_problem(name: str, tape: BranchTape, dirty: tuple = ()) -> str | None:
    if tape.unsupported is not None:
        return f"{name}: {tape.unsupported.detail}"
    if tape.callouts:
        return f"{name} calls `{tape.callouts[0].function_name}`, which must run eagerly"
    origins = dict(tape.current.placeholders)
    for node in tape.current.mutated_placeholders:
        tensor = tape.free[origins[node].index]
        if not any(tensor is d for d in dirty):  # ctx.mark_dirty's inputs may be updated
            return f"{name} updates a tensor from outside it in place"
    return None


def _run_backward(run: MonitorRun, cls: type, ctx, args: tuple, outputs: tuple) -> _Body:
    with unobserved(run):  # stand-in gradients: a graph's values don't depend on them
        grads = [torch.ones_like(o) for o in outputs]
    with torch.no_grad():  # as the autograd engine runs it (no create_graph)
        body = _Body(BranchTape(run, grads))
        outer, run.tape = run.tape, body.tape
        run.speculating, run.speculation_problem, run.late_reads = ctx, None, []
        try:
            result = cls.backward(ctx, *grads)
        except SpeculationBlocked as blocked:
            body.problem = f"backward {blocked}, which eager does only when gradients flow"
        except Exception as error:  # noqa: BLE001 - the user's backward, on stand-in gradients
            body.problem = f"backward raised {type(error).__name__} on stand-in gradients"
        finally:
            problem, run.speculating, run.speculation_problem = run.speculation_problem, None, None
            late, run.late_reads = run.late_reads, None
            run.tape = outer
            outer.keepalive.append(body.tape.keepalive)
    if body.problem is None and problem is not None:
        body.problem = f"backward {problem}, which eager does only when gradients flow"
    if body.problem is None:
        body.problem = _late_read_problem(late)
    if body.problem is None:
        body.outputs = result if isinstance(result, tuple) else (result,)
        body.problem = _body_problem("backward", body.tape) or _gradient_problem(args, body.outputs)
    return body


def _late_read_problem(reads: list) -> str | None:
    """Eager runs backward when the program calls ``backward()``, and reads then what it
    reads: a value from outside (``ALPHA``, ``cfg.scale``) the caller may change after
    the forward.  Modules, classes, functions and tensors (whose in-place changes
    autograd's version counter catches) are taken as they were at the forward."""
    for source, value in reads:
        if isinstance(source, AttrSource) and source.name.startswith("__"):
            continue  # a function's ``__code__`` / ``__defaults__``: which code runs
        fixed = isinstance(value, (types.ModuleType, torch.Tensor, torch.dtype, torch.device))
        if not fixed and not callable(value):
            return f"backward reads {source.expr()}, which the caller may change before backward()"
    return None


def _gradient_problem(args: tuple, grads: tuple) -> str | None:
    """What eager's engine would reject or adjust (it reduces and casts gradients)."""
    if len(grads) != len(args):
        return f"backward returns {len(grads)} gradients for {len(args)} inputs"
    for arg, grad in zip(args, grads):
        if grad is None:
            continue
        if not isinstance(arg, torch.Tensor) or not isinstance(grad, torch.Tensor):
            return "backward returns a gradient for an input that is not a tensor"
        if (grad.shape, grad.dtype, grad.device) != (arg.shape, arg.dtype, arg.device):
            return "backward returns a gradient whose shape, dtype or device differs from its input"
    return None


def _emit(run: MonitorRun, cls: type, ctx, args: tuple, forward: _Body, backward: _Body):
    """The operator node in the current segment, and its outputs on the real tensors."""
    fwd_tape, bwd_tape = forward.tape, backward.tape
    grads = bwd_tape.free[: len(forward.outputs)]
    # Operands: the forward's inputs, then outside tensors only the backward reads.
    operands = list(fwd_tape.free)
    lifted = {**fwd_tape.lifted, **bwd_tape.lifted}
    for grad in backward.outputs:  # a gradient returned untouched is an input too
        if isinstance(grad, torch.Tensor):
            bwd_tape.node_for(grad)
    saved = list(bwd_tape.free[len(grads) :])
    for tensor in saved:
        known = id(tensor) in fwd_tape.producer
        if not known and all(tensor is not o for o in operands):
            operands.append(tensor)
    fwd_body = _forward_body(fwd_tape, operands, forward.outputs, saved)
    bwd_body = _backward_body(bwd_tape, operands, args, grads, saved, backward.outputs)
    kwargs = {
        "non_differentiable_idx": [
            i
            for i, o in enumerate(forward.outputs)
            if any(o is t for t in ctx._fg_non_differentiable)
        ],
        "saved_for_backward_idx": [
            i for i, t in enumerate(saved) if any(t is s for s in ctx._fg_saved)
        ],
    }
    dirty = [i for i, o in enumerate(forward.outputs) if any(o is d for d in ctx._fg_dirty)]
    if dirty:
        kwargs["dirty_idx"] = dirty  # absent otherwise: the call Dynamo emits then
    tape = run.tape
    segment = tape.current
    operand_nodes = [
        tape.lifted_placeholder(*lifted[id(t)]) if id(t) in lifted else tape.node_for(t)
        for t in operands
    ]
    with unobserved(run):  # (storage queries of the monitor's own)
        tape.note_updates(list(ctx._fg_dirty))  # before their outputs rebind them
    tape.sync_grad_mode(segment)
    number = sum(1 for name in segment.submodules if name.startswith("fwd_body"))
    names = (f"fwd_body_{number}", f"bwd_body_{number}")
    segment.submodules[names[0]], segment.submodules[names[1]] = fwd_body, bwd_body
    hop = torch_internals.autograd_function_apply_op()
    node = segment.graph.call_function(
        hop,
        (segment.graph.get_attr(names[0]), segment.graph.get_attr(names[1]), *operand_nodes),
        kwargs,
    )
    segment.op_count += 1
    segment.op_counts[cls.__name__] = segment.op_counts.get(cls.__name__, 0) + 1
    with unobserved(run):
        with torch.no_grad():
            for tensor in ctx._fg_dirty:  # as it was before the captured forward updated it
                tensor.copy_(ctx._fg_inputs_before[id(tensor)])
        outputs = hop(fwd_body, bwd_body, *operands, **kwargs)
    for position, output in enumerate(outputs):
        tape.bind(output, segment.graph.call_function(operator.getitem, (node, position)))
    return outputs if isinstance(forward.result, tuple) else outputs[0]


def _placeholders(graph: torch.fx.Graph, tape: BranchTape, values: list, prefix: str) -> dict:
    """Placeholders for ``values`` in order; the old graph's free inputs mapped onto them."""
    by_tensor = {
        id(tape.free[origin.index]): node
        for node, origin in tape.current.placeholders
        if isinstance(origin, FreeOrigin)
    }
    val_map, new = {}, []
    for position, tensor in enumerate(values):
        node = graph.placeholder(f"{prefix}{position}")
        node.meta["example_value"] = tensor
        new.append(node)
        if id(tensor) in by_tensor:
            val_map[by_tensor[id(tensor)]] = node
    return val_map, new


def _forward_body(tape: BranchTape, operands: list, outputs: tuple, saved: list):
    """``fwd_body(*operands) -> (outputs, saved)``."""
    graph = torch.fx.Graph()
    val_map, inputs = _placeholders(graph, tape, operands, "operand")
    old = tape.current.graph
    old_outputs = [tape.node_for(o) for o in outputs]
    marker = object()
    old_saved = []
    for tensor in saved:
        origin = tape.producer.get(id(tensor))
        if isinstance(origin, NodeOrigin):
            old_saved.append(tape.node_for(tensor))
        else:  # an operand handed straight through to the backward
            old_saved.append((marker, next(i for i, t in enumerate(operands) if t is tensor)))
    old.output((tuple(old_outputs), tuple(n for n in old_saved if not isinstance(n, tuple))))
    copied = graph.graph_copy(old, val_map)
    computed = iter(copied[1])
    saved_nodes = [inputs[n[1]] if isinstance(n, tuple) else next(computed) for n in old_saved]
    graph.output((tuple(copied[0]), tuple(saved_nodes)))
    return torch.fx.GraphModule(torch.nn.Module(), graph, class_name="ForwardBody")


def _backward_body(tape, operands: list, args: tuple, grads: list, saved: list, results: tuple):
    """``bwd_body(*grads, *saved) -> one gradient (or None) per operand``."""
    graph = torch.fx.Graph()
    val_map, _ = _placeholders(graph, tape, [*grads, *saved], "input")
    old = tape.current.graph
    per_operand: list[list] = [[] for _ in operands]
    for arg, grad in zip(args, results):
        if grad is None:
            continue
        position = next(i for i, t in enumerate(operands) if t is arg)
        per_operand[position].append(tape.node_for(grad))
    old.output(tuple(tuple(nodes) for nodes in per_operand))
    copied = graph.graph_copy(old, val_map)
    gradients = []
    for nodes in copied:
        total = None
        for node in nodes:  # the same tensor passed twice: its gradients add up
            total = node if total is None else graph.call_function(operator.add, (total, node))
        gradients.append(total)
    graph.output(tuple(gradients))
    return torch.fx.GraphModule(torch.nn.Module(), graph, class_name="BackwardBody")


class _EagerBackward(torch.autograd.Function):
    """The forward's outputs with the user's backward attached, as ``apply`` gives them:
    used when the capture was given up (the forward has already run, once)."""

    @staticmethod
    def forward(ctx, cls, user_ctx, positions, *tensors):
        inputs, outputs = tensors[: len(positions)], tensors[len(positions) :]
        dirty = [t for t in inputs if any(t is d for d in user_ctx._fg_dirty)]
        if dirty:
            ctx.mark_dirty(*dirty)
        frozen = [o for o in outputs if any(o is t for t in user_ctx._fg_non_differentiable)]
        if frozen:
            ctx.mark_non_differentiable(*frozen)
        ctx.set_materialize_grads(user_ctx._fg_materialize_grads)
        ctx.fullgraph_call = (cls, user_ctx, positions)
        return outputs

    @staticmethod
    def backward(ctx, *grads):
        cls, user_ctx, positions = ctx.fullgraph_call
        # The user's backward takes a gradient for every output, None for a non-tensor.
        given = iter(grads)
        every = [next(given) if tensor else None for tensor in user_ctx._fg_tensor_outputs]
        result = cls.backward(user_ctx, *every)
        result = result if isinstance(result, tuple) else (result,)
        inputs = (result[p] if p < len(result) else None for p in positions)
        outputs = (None for _ in range(len(grads)))  # handed in only to be handed back
        return (None, None, None, *inputs, *outputs)

    @classmethod
    def attach(cls_, cls: type, user_ctx: FunctionContext, args: tuple, result: Any):
        """``result`` as apply gives it: its tensors carry the user's backward, other
        outputs (``return y, n``) are handed back as they are."""
        outputs = result if isinstance(result, tuple) else (result,)
        user_ctx._fg_tensor_outputs = [isinstance(o, torch.Tensor) for o in outputs]
        tensors = [o for o in outputs if isinstance(o, torch.Tensor)]
        if not tensors:
            return result
        positions = tuple(i for i, a in enumerate(args) if isinstance(a, torch.Tensor))
        inputs = [args[p] for p in positions]
        attached = cls_.apply(cls, user_ctx, positions, *inputs, *tensors)
        given = iter(attached if isinstance(attached, tuple) else (attached,))
        back = tuple(next(given) if isinstance(o, torch.Tensor) else o for o in outputs)
        return back if isinstance(result, tuple) else back[0]
