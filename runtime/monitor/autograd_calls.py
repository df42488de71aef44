"""Calls that run autograd or change training state: always replayed, never captured.

``loss.backward()``, ``torch.autograd.grad``, an optimizer's ``step()``, a
module's ``zero_grad()`` or ``train()``: each acts on state outside the
operator graph (``.grad`` fields, optimizer state, module flags), mostly in
torch's own Python code that the monitor does not step into.  Dropping one on
replay would leave gradients stale or skip an update, so each becomes an
effectful callout (break FG208) that the mock makes again on every call, in
program order.  Reading a tensor's ``.grad`` is replayed too: the gradient is
whatever the backward calls before it left there.
"""

from __future__ import annotations

import functools
import inspect
import types
from typing import Any

import torch

from fullgraph.runtime.monitor.user_code import is_user_code

# Module methods of torch.nn.Module that change the module (or its parameters'
# gradients) rather than compute with it.
_MODULE_STATE_METHODS = frozenset(
    [
        "zero_grad",
        "train",
        "eval",
        "requires_grad_",
        "register_buffer",
        "register_parameter",
        "register_module",
        "add_module",
        "register_forward_hook",
        "register_forward_pre_hook",
        "register_full_backward_hook",
        "register_full_backward_pre_hook",
        "register_backward_hook",
        "apply",
        "to",
        "cpu",
        "cuda",
        "float",
        "double",
        "half",
        "bfloat16",
        "type",
        "load_state_dict",
        "share_memory",
        "set_submodule",
        "set_extra_state",
    ]
)
_OPTIMIZER_METHODS = frozenset(["step", "zero_grad", "add_param_group", "load_state_dict"])


def _torch_function(fn: Any) -> bool:
    """Whether ``fn`` is torch's own Python (or native) code, not an override in user code."""
    target = fn.__func__ if isinstance(fn, types.MethodType) else fn
    code = getattr(target, "__code__", None)
    return code is None or not is_user_code(code)


@functools.cache
def _autograd_functions() -> tuple:
    import torch.nn.utils

    return (
        torch.autograd.backward,
        torch.autograd.grad,
        torch.Tensor.backward,
        torch.nn.utils.clip_grad_norm_,
        torch.nn.utils.clip_grad_value_,
    )


def _receiver(fn: Any, args: tuple, name: str) -> Any:
    """The object a method call is made on: a bound method's ``__self__``, or (after
    LOAD_METHOD) the first argument of the plain function its type holds as ``name``."""
    receiver = getattr(fn, "__self__", None)
    if receiver is None and args and isinstance(fn, types.FunctionType):
        receiver = args[0] if getattr(type(args[0]), name, None) is fn else None
    return receiver


def is_autograd_state_call(fn: Any, args: tuple = ()) -> bool:
    """Whether a call the monitor is about to make changes autograd or training state.

    ``fn`` may be a bound method, or (after LOAD_METHOD) the plain function with
    its receiver first in ``args``.
    """
    target = fn.__func__ if isinstance(fn, types.MethodType) else fn
    if target in _autograd_functions():
        return True
    name = getattr(fn, "__name__", "")
    receiver = _receiver(fn, args, name)
    if receiver is None and isinstance(fn, types.FunctionType) and _torch_function(fn):
        # ``opt.step`` after an LR scheduler wrapped it: a plain function in the instance
        # that wraps the optimizer's own method.
        inner = inspect.unwrap(fn)
        module = getattr(inner, "__module__", "") or ""
        if inner is not fn and module.startswith("torch.optim"):
            return getattr(inner, "__name__", "") in _OPTIMIZER_METHODS
    if receiver is None or not _torch_function(fn):
        return False
    if isinstance(receiver, torch.optim.Optimizer):
        return name in _OPTIMIZER_METHODS
    if isinstance(receiver, torch.optim.lr_scheduler.LRScheduler):
        return name == "step"
    if isinstance(receiver, torch.nn.Module):
        return name in _MODULE_STATE_METHODS
    return False


def is_autograd_torch_function(func: Any) -> bool:
    """The same, for a function a torch-function mode sees (``Tensor.backward``)."""
    return func in _autograd_functions()


def is_grad_read(func: Any, args: tuple) -> bool:
    """``t.grad`` as a torch-function mode sees it (the property's ``__get__``)."""
    return (
        getattr(func, "__name__", None) == "__get__"
        and getattr(getattr(func, "__self__", None), "__name__", None) == "grad"
        and bool(args)
        and isinstance(args[0], torch.Tensor)
    )


def state_changed_by(fn: Any, args: tuple = ()) -> tuple[type, ...]:
    """The kinds of objects whose plain attributes a training-state call changes.

    Gradients are left out: every ``.grad`` read is a replayed callout already.
    An optimizer step changes the optimizer's state, a scheduler step the learning
    rates in its optimizer's ``param_groups`` and its own counters, and a module
    method (``train()``, ``to()``, ``register_buffer``) the module and its tensors.
    """
    target = fn.__func__ if isinstance(fn, types.MethodType) else fn
    name = getattr(inspect.unwrap(target), "__name__", "") if callable(target) else ""
    receiver = _receiver(fn, args, name)
    if name == "zero_grad" or target in _autograd_functions():
        return ()
    if isinstance(receiver, torch.optim.lr_scheduler.LRScheduler):
        return (SchedulerStepState, torch.optim.lr_scheduler.LRScheduler)
    if isinstance(receiver, torch.nn.Module):
        if name in ("train", "eval"):
            return (ModuleTrainingFlags,)
        return (torch.nn.Module, torch.Tensor)
    if name == "step":
        return (OptimizerStepState,)  # torch's own step: only ``opt.state`` changes
    return (torch.optim.Optimizer,)  # add_param_group, load_state_dict


class SchedulerStepState:
    """What a learning-rate scheduler's ``step()`` changes in its optimizer: the
    hyperparameters in ``param_groups`` (``lr``, a cyclic schedule's ``momentum``), not
    the optimizer's methods (``opt.step``, which the scheduler wrapped when it was made)."""


class ModuleTrainingFlags:
    """What ``module.train()`` / ``.eval()`` change: the ``training`` flag of the module
    and its submodules, nothing else (reading ``model.train`` itself to call it is an
    ordinary read)."""


class OptimizerStepState:
    """What torch's own ``optimizer.step()`` changes: the optimizer's ``state`` (its
    momentum buffers, step counts), never its ``param_groups`` or methods.  So after
    ``opt.step()`` a read of ``opt.zero_grad`` or ``opt.param_groups[0]["lr"]`` is an
    ordinary read; only reads through ``opt.state`` are of state the call changed."""


@functools.cache
def distributed_wrappers() -> tuple[type, ...]:
    """Modules whose call does bookkeeping outside the operator graph on every call
    (DDP prepares its gradient all-reduce, FSDP gathers and frees shards)."""
    import torch.nn.parallel

    wrappers: list[type] = [
        torch.nn.parallel.DistributedDataParallel,
        torch.nn.parallel.DataParallel,
    ]
    try:
        from torch.distributed.fsdp import FullyShardedDataParallel

        wrappers.append(FullyShardedDataParallel)
    except ImportError:  # a torch built without distributed support
        pass
    return tuple(wrappers)


def is_custom_function_apply(fn: Any, args: tuple) -> bool:
    """``MyFunction.apply(...)``: bound to the class, or (as the interpreter may call a
    classmethod) the underlying function with the class as its first argument."""
    owner = getattr(fn, "__self__", None)
    if getattr(fn, "__name__", None) != "apply":
        return False
    if owner is None and getattr(fn, "__qualname__", "") == "Function.apply" and args:
        owner = args[0]
    return isinstance(owner, type) and issubclass(owner, torch.autograd.Function)


def needs_grad(args: tuple, kwargs: dict) -> bool:
    """Whether autograd records the call: grad mode is on and a tensor argument requires
    grad (its outputs then get the Function's backward)."""
    if not torch.is_grad_enabled():
        return False
    values = (*args, *kwargs.values())
    return any(isinstance(v, torch.Tensor) and v.requires_grad for v in values)


def detaching_variable(args: tuple, kwargs: dict) -> bool:
    """``Variable(t)`` / ``Variable(t, requires_grad=False)``: a detached alias of ``t``."""
    return (
        len(args) == 1
        and isinstance(args[0], torch.Tensor)
        and set(kwargs) <= {"requires_grad"}  # volatile= warns that it was removed
        and not kwargs.get("requires_grad", False)
    )


def legacy_variable(data: torch.Tensor, requires_grad: bool = False):
    """What ``torch.autograd.Variable(data)`` returns (no grad history, the same storage),
    as a tensor method the capture records."""
    return data.detach()
