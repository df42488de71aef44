"""The torch-internal APIs fullgraph depends on, in one place.

torch moves private APIs between releases (fullgraph supports torch 2.11
through 2.14 and is tested on 2.11, 2.12.1, 2.13 and 2.14.1); everything
private is imported here so that a move is fixed once.
"""

from __future__ import annotations

import contextlib
import functools
import inspect

import torch
from torch.overrides import TorchFunctionMode  # noqa: F401  (public since 2.0)
from torch.utils._pytree import tree_flatten, tree_unflatten  # noqa: F401

from fullgraph.runtime import inductor_random_order


def inductor_options(draws_random: bool) -> dict:
    """The Inductor options of every compile of fullgraph's: random ops draw eager's
    numbers in eager's order (``inductor_random_order``), and a bf16 / fp16 cast rounds
    as eager's does (``y.float()`` equals ``y``)."""
    return {**inductor_random_order.options(draws_random), "emulate_precision_casts": True}


def keep_saved_buffers() -> None:
    """Turn AOTAutograd's buffer donation off, for the process.

    A donating backward frees the buffers it saved as it runs, which makes
    ``loss.backward(retain_graph=True)`` raise when the backward was compiled ahead
    (a graph loaded from the on-disk caches); eager keeps them.  Off only while
    compiling is not enough: the backward checks the switch again when it runs, and
    a graph compiled without donation fails that check while the switch is on.
    """
    import torch._functorch.config as functorch_config

    functorch_config.donated_buffer = False


def compile_fx(gm: torch.fx.GraphModule, example_inputs: list, draws_random: bool = True):
    """Inductor's entry point for an fx graph (C++/OpenMP on CPU, Triton on GPU).

    Returns a function taking the graph inputs as positional arguments.  What
    ``compile_fx`` returns differs by path: the inference path wants one list
    ("boxed" calling convention), the training path ``*args`` — and both carry
    ``_boxed_call``.  The outermost signature (not the wrapped one) tells.
    ``draws_random``: whether the graph may draw random numbers (then, on a torch
    that would reorder the draws, the reordering passes are off for it).
    """
    import inspect

    import torch._inductor.config as inductor_config
    from torch._inductor.compile_fx import compile_fx as inductor_compile_fx

    # Random ops draw from torch's own generator, op by op as eager does: a replay gives
    # eager's numbers under the same seed and leaves the same RNG state.
    keep_saved_buffers()
    with (
        inductor_config.patch(inductor_options(draws_random)),
        _static_tracing(example_inputs) as fakes,
    ):
        compiled = inductor_compile_fx(gm, fakes)
    parameters = inspect.signature(compiled, follow_wrapped=False).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters):
        run = compiled
    else:

        def run(*args):
            return compiled(list(args))

    computed = _computed_outputs(gm)
    if not computed:
        return run

    def fresh_outputs(*args):
        # Inductor may hand back an input for an op that computes an equal tensor
        # (``x * 1.0``); eager gives a new tensor, and so must the replay.
        outputs = run(*args)
        inputs = {id(a) for a in args}
        if not any(id(outputs[i]) in inputs for i in computed if i < len(outputs)):
            return outputs
        return type(outputs)(
            o.clone() if i in computed and id(o) in inputs else o for i, o in enumerate(outputs)
        )

    return fresh_outputs


@contextlib.contextmanager
def _static_tracing(example_inputs: list):
    """Fake copies of the example inputs, with static sizes, in a tracing context.

    Inductor's on-disk FX graph cache keys a graph by its inputs' fake tensors
    and their shape environment; handed real tensors, it has neither and skips
    the cache ("No shape env"), so a second process compiled every graph again.
    This is the context Dynamo hands ``compile_fx``.
    """
    from torch._guards import TracingContext, tracing
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    mode = FakeTensorMode(shape_env=ShapeEnv())
    fakes = [
        mode.from_tensor(value, static_shapes=True) if isinstance(value, torch.Tensor) else value
        for value in example_inputs
    ]
    with tracing(TracingContext(mode)):
        yield fakes


def _computed_outputs(gm: torch.fx.GraphModule) -> frozenset[int]:
    """Positions of the graph's outputs that ops compute (not inputs passed through)."""
    output = next(n for n in gm.graph.nodes if n.op == "output")
    values = output.args[0] if isinstance(output.args[0], (tuple, list)) else (output.args[0],)
    return frozenset(
        i for i, v in enumerate(values) if isinstance(v, torch.fx.Node) and v.op != "placeholder"
    )


def cond_function():
    """``torch.cond`` as user code calls it (public since 2.5; ``None`` before)."""
    return getattr(torch, "cond", None)


def cond_op():
    """The higher-order operator ``torch.cond`` dispatches to; graph nodes call it directly."""
    return torch.ops.higher_order.cond


def autograd_function_apply_op():
    """The higher-order operator Dynamo emits for a custom autograd.Function:
    ``autograd_function_apply(fwd_body, bwd_body, *operands, non_differentiable_idx=...,
    saved_for_backward_idx=...)``; None on a torch without it."""
    try:
        from torch._functorch.autograd_function import autograd_function_apply
    except ImportError:
        return None
    return autograd_function_apply


@functools.cache
def autograd_function_apply_marks_dirty() -> bool:
    """Whether this torch's autograd_function_apply takes ``dirty_idx`` (ctx.mark_dirty)."""
    op = autograd_function_apply_op()
    if op is None:
        return False
    try:
        return "dirty_idx" in inspect.getsource(type(op).__call__)
    except (OSError, TypeError):
        return False


def fakes_with_shape_env(values: list) -> list:
    """Fake copies of a graph's example inputs (same sizes) in a fake mode with a
    ShapeEnv, where an op whose output sizes depend on data gets unbacked symbols."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    mode = FakeTensorMode(shape_env=ShapeEnv())
    return [
        mode.from_tensor(v, static_shapes=True) if isinstance(v, torch.Tensor) else v
        for v in values
    ]


def set_grad_enabled_op():
    """The graph node target that switches grad mode inside a graph (as Dynamo emits)."""
    return torch._C._set_grad_enabled


def enter_autocast_op():
    """Graph nodes that enter and leave a torch.autocast region (as Dynamo emits them)."""
    from torch.amp.autocast_mode import _enter_autocast

    return _enter_autocast


def exit_autocast_op():
    from torch.amp.autocast_mode import _exit_autocast

    return _exit_autocast


def getset_descriptor_name(func, method: str = "__get__") -> str | None:
    """For ``Tensor.T.__get__``-style functions seen by a torch-function mode, the property
    name (``method="__set__"``: for ``Tensor.data.__set__``, a property's setter)."""
    if getattr(func, "__name__", None) == method:
        owner = getattr(func, "__self__", None)
        return getattr(owner, "__name__", None)
    return None


# -- symbolic sizes (runtime/symbolic/shapes.py) ----------------------------------------
def fake_mode_with_symbols():
    """A FakeTensorMode whose ShapeEnv makes a fresh symbol for every varying size.

    No duck sizing (two sizes that happen to be equal stay independent) and no
    0/1 specialization: the fake run must not assume anything a later call may
    break, since its ShapeEnv guards are never checked.
    """
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    return FakeTensorMode(shape_env=ShapeEnv(duck_shape=False, specialize_zero_one=False))


@contextlib.contextmanager
def fake_run(mode):
    """Run torch calls on fake tensors the way Dynamo does: with the Python dispatcher,
    whose size-generic decompositions (``constant_pad_nd``, ``lstm`` ...) keep sizes
    symbolic where some C++ meta functions would fix them to today's numbers.

    Without grad: only sizes are wanted, and an op on fakes that saved tensors for
    backward would be seen by the program's saved-tensor hooks (``checkpoint``
    counts them and refuses a recomputation that saves fewer)."""
    from torch._dispatch.python import enable_python_dispatcher

    with torch.no_grad(), mode, enable_python_dispatcher():
        yield


def fake_from(mode, tensor: torch.Tensor, dynamic_dims: set, name: str) -> torch.Tensor:
    """A fake copy of ``tensor`` whose ``dynamic_dims`` are symbols, the rest static."""
    from torch._dynamo.source import ConstantSource
    from torch.fx.experimental.symbolic_shapes import DimDynamic, StatelessSymbolicContext

    if not dynamic_dims:
        return mode.from_tensor(tensor, static_shapes=True)
    sizes = [
        DimDynamic.DYNAMIC if dim in dynamic_dims else DimDynamic.STATIC
        for dim in range(tensor.dim())
    ]
    context = StatelessSymbolicContext(dynamic_sizes=sizes)
    return mode.from_tensor(tensor, symbolic_context=context, source=ConstantSource(name))


def is_symbolic(size) -> bool:
    return (
        isinstance(size, torch.SymInt)
        and not size.node.is_constant()
        and size.node.expr.free_symbols != set()
    )


def symbol_of(size):
    """The sympy symbol of a size that is exactly one symbol, else None."""
    if not isinstance(size, torch.SymInt):
        return None
    expr = size.node.expr
    return expr if getattr(expr, "is_Symbol", False) else None


def sympy_expr(size):
    return size.node.expr


def shape_replacements(env) -> list:
    """``(symbol, expression)`` pairs a ShapeEnv substituted (a symbol found equal to another)."""
    return list(getattr(env, "replacements", {}).items())


def shape_guards(env) -> list:
    """The boolean size facts a ShapeEnv relied on (sympy expressions)."""
    return [guard.expr for guard in getattr(env, "guards", [])]


def shape_lower_bound(env, symbol) -> int | None:
    """The least value a ShapeEnv lets a size symbol take, if it says."""
    bounds = getattr(env, "var_to_range", {}).get(symbol)
    lower = getattr(bounds, "lower", None)
    try:
        return int(lower)
    except (TypeError, ValueError, OverflowError):
        return None


def sympy_parts(expr):
    """``(operator, operands)`` of a sympy size expression, else None.

    The operator is Python's: ``+ * // % **``, a comparison, ``and``/``or``/``not``,
    or ``max``/``min``.  ``**`` only with a positive integer exponent.
    """
    import sympy
    from torch.utils._sympy.functions import CleanDiv, FloorDiv, Mod, PythonMod

    kinds = (
        (sympy.Eq, "=="),
        (sympy.Ne, "!="),
        (sympy.Lt, "<"),
        (sympy.Le, "<="),
        (sympy.Gt, ">"),
        (sympy.Ge, ">="),
        ((FloorDiv, CleanDiv), "//"),
        ((Mod, PythonMod), "%"),
        (sympy.And, "and"),
        (sympy.Or, "or"),
        (sympy.Not, "not"),
        (sympy.Max, "max"),
        (sympy.Min, "min"),
    )
    if expr.is_Add:
        return "+", expr.args
    if expr.is_Mul:
        return "*", expr.args
    if expr.is_Pow and expr.args[1].is_Integer and int(expr.args[1]) > 0:
        return "**", expr.args
    for kind, operator in kinds:
        if isinstance(expr, kind):
            return operator, expr.args
    return None


# Global torch state that changes what the same operations compute: each entry is an
# expression a guard evaluates and a function that reads its value now.
AUTOCAST_DEVICES = ("cpu", "cuda")


INFERENCE_MODE = "torch.is_inference_mode_enabled()"  # its key in global_state()


def global_state() -> dict[str, object]:
    """Expression -> current value, for the global state a record depends on (beyond
    grad mode and the default dtype, which guards check first)."""
    state: dict[str, object] = {
        INFERENCE_MODE: torch.is_inference_mode_enabled(),
        "torch.are_deterministic_algorithms_enabled()": (
            torch.are_deterministic_algorithms_enabled()
        ),
    }
    for device in AUTOCAST_DEVICES:
        state[f"torch.is_autocast_enabled({device!r})"] = torch.is_autocast_enabled(device)
        # Also while autocast is off: ``torch.autocast("cpu")`` inside the function, with
        # no dtype, takes this one (``torch.set_autocast_dtype``, an outer disabled block).
        state[f"torch.get_autocast_dtype({device!r})"] = torch.get_autocast_dtype(device)
    return state


def torch_state() -> tuple:
    """Grad mode, autocast's settings and its nesting: what a graph that raised part-way
    (inside its ``no_grad`` / ``autocast`` regions) leaves changed."""
    nesting = torch.autocast_decrement_nesting() + 1
    torch.autocast_increment_nesting()
    return torch.is_grad_enabled(), autocast_state(), nesting


def restore_torch_state(state: tuple) -> None:
    """Put back what :func:`torch_state` took; leaving the outermost autocast region
    clears its cast cache, as ``torch.autocast.__exit__`` does."""
    grad, autocast, nesting = state
    torch._C._set_grad_enabled(grad)
    for device, (enabled, dtype) in zip(AUTOCAST_DEVICES, autocast):
        torch.set_autocast_enabled(device, enabled)
        torch.set_autocast_dtype(device, dtype)
    now = torch.autocast_decrement_nesting() + 1
    torch.autocast_increment_nesting()
    while now > nesting:
        now = torch.autocast_decrement_nesting()
        if now == 0:
            torch.clear_autocast_cache()


def autocast_state() -> tuple:
    """Autocast's settings now, per device type (compared op by op during a run)."""
    return tuple(
        (torch.is_autocast_enabled(d), torch.get_autocast_dtype(d)) for d in AUTOCAST_DEVICES
    )


def unversioned_updates(func, args: tuple, kwargs: dict) -> list[torch.Tensor]:
    """Tensors ``func`` updates in place without moving their version counters, which
    is how the monitor sees other updates: batch norm in training mode updates its
    running mean and variance in the kernel (``F.batch_norm`` and ``torch.batch_norm``;
    seen on CPU with torch 2.13, and taken as updated on every device)."""
    if func is torch.nn.functional.batch_norm:
        try:
            bound = inspect.signature(func).bind(*args, **kwargs)
        except TypeError:
            return []
        bound.apply_defaults()
        training = bound.arguments["training"]
        stats = bound.arguments["running_mean"], bound.arguments["running_var"]
    elif func is torch.batch_norm and len(args) > 5:  # input, weight, bias, mean, var, training
        training, stats = args[5], (args[3], args[4])
    else:
        return []
    if not training:
        return []
    return [t for t in stats if isinstance(t, torch.Tensor)]


def schema_updates(func, args: tuple, kwargs: dict) -> list[torch.Tensor]:
    """The tensors an aten op's schema says ``func`` writes (``Tensor(a!)``, also in a
    list), for the ops that move no version counter when they do
    (``torch._amp_foreach_non_finite_check_and_unscale_`` updates the gradients and
    ``found_inf``, ``torch._amp_update_scale_`` the growth tracker): the monitor would
    otherwise take the update for none."""
    name = getattr(func, "__name__", None)
    layout = _written_parameters(name) if isinstance(name, str) and name.endswith("_") else ()
    written: list[torch.Tensor] = []
    for names, writes in layout:
        if len(args) > len(names):
            continue
        for i, (param, write) in enumerate(zip(names, writes)):
            value = args[i] if i < len(args) else kwargs.get(param)
            items = value if isinstance(value, (list, tuple)) else [value]
            written += [t for t in items if write and isinstance(t, torch.Tensor)]
        break
    return written


@functools.cache
def _written_parameters(name: str) -> tuple:
    """Per overload of ``aten.<name>`` that writes an argument: its parameter names and
    which of them it writes (empty where none does, or there is no such op)."""
    try:
        packet = getattr(torch.ops.aten, name)
        schemas = [getattr(packet, overload)._schema for overload in packet.overloads()]
    except (AttributeError, RuntimeError):
        return ()
    layouts = []
    for schema in schemas:
        writes = tuple(bool(p.alias_info and p.alias_info.is_write) for p in schema.arguments)
        if any(writes):
            layouts.append((tuple(p.name for p in schema.arguments), writes))
    return tuple(layouts)


# -- torch modes the caller runs the function under -------------------------------------
# A ``with torch.device("meta"):`` block and ``torch.set_default_device`` push a
# DeviceContext torch-function mode, which gives factories without a ``device=`` that
# device.  Any other mode (a user's TorchFunctionMode, a dispatch mode such as
# FlopCounterMode) changes what operations do in ways a compiled graph bypasses.


def _active_modes() -> tuple[tuple[str, ...], str | None]:
    """(devices of the DeviceContext modes active now, bottom of the stack first; the
    name of the first other torch mode active, or None)."""
    if not torch._C._len_torch_function_stack() and not torch._C._len_torch_dispatch_stack():
        return (), None  # every call asks: the common answer without an import
    from torch.utils._device import DeviceContext

    devices = []
    for position in range(torch._C._len_torch_function_stack()):
        mode = torch._C._get_function_stack_at(position)
        if type(mode) is not DeviceContext:
            return tuple(devices), f"torch function mode {type(mode).__qualname__}"
        devices.append(str(mode.device))
    if torch._C._len_torch_dispatch_stack():
        return tuple(devices), "a torch dispatch mode"
    return tuple(devices), None


def default_devices() -> tuple[str, ...] | None:
    """The devices of the DeviceContext modes active now, bottom of the stack first
    (``()``: none); None when some other torch-function or dispatch mode is active."""
    devices, other = _active_modes()
    return None if other is not None else devices


def foreign_mode() -> str | None:
    """The name of an active torch mode that is not a DeviceContext, if any."""
    return _active_modes()[1]


def device_constructors() -> set:
    """The factories a DeviceContext gives its device when they get no ``device=``."""
    from torch.utils._device import _device_constructors

    return _device_constructors()


def tensor_version(tensor: torch.Tensor) -> int | None:
    """The tensor's version counter (bumped by in-place updates); None for inference
    tensors, which have none: an update of one is then only seen in the op's name."""
    if isinstance(tensor, torch.nn.parameter.UninitializedTensorMixin):
        return None  # a lazy module's parameter before its first forward: no data yet
    # Not through a tensor subclass's __torch_function__: this is the monitor's query.
    with torch._C.DisableTorchFunctionSubclass():
        if tensor.is_inference():
            return None
        return tensor._version


def control_flow_errors() -> tuple[type[BaseException], ...]:
    """Exceptions torch raises through the program to steer itself, not as errors: the
    non-reentrant checkpoint stops its recompute early from a saved-tensor hook."""
    import torch.utils.checkpoint

    stop = getattr(torch.utils.checkpoint, "_StopRecomputationError", None)
    return (stop,) if isinstance(stop, type) else ()
