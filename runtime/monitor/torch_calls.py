"""Torch-call routing: each torch call of a monitoring run becomes a graph node or a callout.

Mixed into :class:`~fullgraph.runtime.monitor.run.MonitorRun`.  The capture
mode hands every torch call here: data-dependent shapes and value reads
become callouts (the graph is split and the call replayed), autograd and
hidden-state queries are replayed in order, the rest is recorded on the tape;
size queries become symbolic sizes when the run follows sizes.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
from torch.nn.parameter import is_lazy

from fullgraph.runtime import breaks, torch_internals
from fullgraph.runtime.capture import data_dependent
from fullgraph.runtime.capture.mode import DATA_DEPENDENT, VALUE_READS
from fullgraph.runtime.capture.segments import Unsupported
from fullgraph.runtime.monitor import (
    annotation_table,
    autograd_calls,
    changed_arguments,
    index_objects,
    raising_calls,
    speculation,
)
from fullgraph.runtime.record.mock_support import Raised
from fullgraph.runtime.symbolic.scalars import Condition, Op
from fullgraph.runtime.symbolic.sizes import SizeInt, holds_size, plain
from fullgraph.runtime.torch_internals import (
    getset_descriptor_name,
    schema_updates,
    tensor_version,
    tree_flatten,
    unversioned_updates,
)

# Tensor calls whose result or effect the guard's checks (type, dtype, device, shape,
# strides, requires_grad) do not determine.
_HIDDEN_STATE_EFFECTS = frozenset(
    [
        "retain_grad",
        "register_hook",
        "register_post_accumulate_grad_hook",
        "record_stream",
        "share_memory_",
        "pin_memory",
    ]
)
_HIDDEN_STATE_CALLS = _HIDDEN_STATE_EFFECTS | frozenset(
    [
        "data_ptr",
        "untyped_storage",
        "storage",
        "_storage",
        "is_inference",
        "is_leaf",
        "_version",
        "grad_fn",
        "is_shared",
        "is_pinned",
        "_is_view",
        "is_set_to",
        "retains_grad",
        "storage_offset",
        "_base",  # whether the tensor is a view, and of what
        "output_nr",
        "_cdata",
        "is_conj",  # lazy conjugate / negative views: dispatch keys the guard doesn't read
        "is_neg",
    ]
)
# Tensor queries whose result depends on a size (the graph can't be size-generic then).
_SIZE_READS = frozenset(
    ["shape", "size", "__len__", "numel", "nelement", "nbytes", "stride", "storage_offset"]
)
# In-place calls that give a tensor another shape or strides (``set_``, which also gives
# it other memory, never reaches a torch-function mode: monitor/calls.py refuses it).
_SHAPE_CHANGES = frozenset(
    [
        "resize_",
        "resize_as_",
        "squeeze_",
        "unsqueeze_",
        "t_",
        "transpose_",
        "swapdims_",
        "swapaxes_",
        "as_strided_",
    ]
)
_POWER_OPS = frozenset(["pow", "pow_", "__pow__", "__ipow__", "float_power"])
_SIZE_DEPENDENT_OPS = frozenset(["split", "unbind", "tensor_split", "__iter__", "split_with_sizes"])


class TorchCallRouting:
    """Where a torch call the program makes goes: the graph, or a callout."""

    def on_torch_call(self, func, args: tuple, kwargs: dict) -> Any:
        if self.paused:
            return func(*args, **kwargs)
        # The monitor's own Python (dataclass __init__s and the like) must not be
        # observed: new frames are left untraced while this handler runs.
        self.paused = True
        program_time, self.hooks.fullgraph = self.hooks.fullgraph, True
        try:
            return self._torch_call(func, args, kwargs)
        finally:
            self.paused = False
            self.hooks.fullgraph = program_time

    def _torch_call(self, func, args: tuple, kwargs: dict) -> Any:
        name = getattr(func, "__name__", "")
        prop = getset_descriptor_name(func)
        if torch._C._len_torch_dispatch_stack() and self.branching is None:
            # ``with MyDispatchMode():`` inside the function: it changes each op below the
            # level the graph records it at, and a replay would run the ops without it.
            self.refuse("a TorchDispatchMode entered inside the function changes its operations")
        if self.speculating is not None:
            effect = speculation.torch_effect(
                func, prop or name, args, kwargs, self.tape.computed, _HIDDEN_STATE_EFFECTS
            )
            if effect is not None:
                self.speculation_problem = self.speculation_problem or effect
                raise speculation.SpeculationBlocked(effect)
        args, kwargs = index_objects.plain_indices(self, args, kwargs)  # x[I]: I's int
        if getset_descriptor_name(func, "__set__") == "data" and len(args) == 2:
            # ``p.data = v``, by the program or by torch's Python (``vector_to_parameters``,
            # which the monitor does not step into): no op, so torch's function modes
            # are the one place that sees both.
            # (A lazy layer materializing its parameter on the first call is not a store:
            # the parameter had no data before, and the layer's class changes with it.)
            if isinstance(args[1], torch.Tensor) and not is_lazy(args[0]):
                self.store_data(args[0], args[1])
            return func(*args, **kwargs)
        if (
            name in _SHAPE_CHANGES
            and args
            and isinstance(args[0], torch.Tensor)
            and not self.tape.computed_in_current_segment(args[0])
        ):
            # ``x.squeeze_(0)``, ``self.buf.resize_(n)`` on an input of the graph (from
            # outside, a callout's result, an earlier graph's output): the graph would be
            # compiled for the shape the input has after the call, not the one it gets.
            self.refuse(f"Tensor.{name} changes the shape of a tensor the graph takes in")
        sized_by_data = (  # the output's sizes come from the data: nonzero, x[mask]
            name in DATA_DEPENDENT
            or (name == "__getitem__" and _has_mask_index(args))
            or (func is torch.where and len(args) + len(kwargs) == 1)
        )
        if (
            (sized_by_data and not data_dependent.may_enter_graph(self, func, name))
            or _packed_sequence_call(name, args)
            or _size_from_tensor(name, args)
        ):
            result = func(*args, **kwargs)
            self.torch_callout(func, args, kwargs, result, breaks.DATA_DEPENDENT_SHAPE)
            return result
        if _from_array(name, args):  # made eagerly, but no shape depends on data (FG204)
            result = func(*args, **kwargs)
            self.torch_callout(func, args, kwargs, result, breaks.UNKNOWN_NATIVE_CALL)
            return result
        reads_size = name in _SIZE_READS or prop in _SIZE_READS or name in _SIZE_DEPENDENT_OPS
        if reads_size and args and data_dependent.shaped_by_data(self.tape, args[0]):
            # ``rows.shape[0]``, ``for i in idx``: Python depends on a size the data decides;
            # as a callout's result such a size can be followed (symbolic/shapes.py).
            data_dependent.keep_as_callouts(self, "Python reads a size that depends on data")
        if name in _SIZE_DEPENDENT_OPS and not self._static_size(name, args, kwargs):
            self.size_reads += 1  # how many outputs depends on a size
        if name == "__iter__" and args and isinstance(args[0], torch.Tensor) and args[0].dim() > 0:
            return iter(self._torch_call(torch.Tensor.unbind, (args[0], 0), {}))
        grad_read = autograd_calls.is_grad_read(func, args)
        if grad_read or autograd_calls.is_autograd_torch_function(func):
            # backward() reached from library code, or a gradient read: replayed in order.
            effectful = not grad_read
            index = len(self.tape.callouts)
            if index in self.injected:
                result = self.injected.pop(index)
                if type(result) is Raised:  # it raised in the replay that ran before
                    raise result.error
            else:
                result = func(*args, **kwargs)
            self.torch_callout(
                func, args, kwargs, result, breaks.AUTOGRAD_STATE_CALL, effectful=effectful
            )
            return result
        if _makes_a_leaf(func, name, args, kwargs, self.tape.computed_in_current_segment):
            # ``t.requires_grad_()``, ``torch.ones(n, requires_grad=True)``: a graph compiled
            # by AOTAutograd/Inductor can't make a leaf of autograd (the flag on its output
            # is its own, or dropped), so the flag is set between graphs, every call (F160).
            if kwargs.get("requires_grad") is True:
                # The factory stays in the graph (its draws among the graph's), without
                # the flag; ``requires_grad_()`` on its output is the callout.
                plain_kwargs = {k: v for k, v in kwargs.items() if k != "requires_grad"}
                made = self._torch_call(func, args, plain_kwargs)
                if not isinstance(made, torch.Tensor):  # (no factory returns anything else)
                    self.refuse(f"{name} with requires_grad=True returned no single tensor")
                    for leaf in tree_flatten(made)[0]:
                        if isinstance(leaf, torch.Tensor):
                            leaf.requires_grad_()  # (the monitor is paused: a plain call)
                    return made
                return self._torch_call(torch.Tensor.requires_grad_, (made,), {})
            # Made again after a replay that missed past it: that replay flagged its own
            # tensors, not this run's (on an argument, flagging twice is the same).
            self.injected.pop(len(self.tape.callouts), None)
            result = func(*args, **kwargs)
            if name == "__set__":  # ``t.requires_grad = flag``: the mock sets it the same way
                func, args, kwargs, result = torch.Tensor.requires_grad_, args[:2], {}, args[0]
            self.torch_callout(
                func, args, kwargs, result, breaks.AUTOGRAD_STATE_CALL, effectful=True
            )
            return None if name == "__set__" else result
        if name == "__bool__" and self.branching is not None and len(args) == 1 and not kwargs:
            return self.branching.read(self, func, args, kwargs)  # a path's branch point
        if name in VALUE_READS and len(self.tape.callouts) in self.injected:
            result = self.injected.pop(len(self.tape.callouts))  # read in the replay that missed
            self.torch_callout(func, args, kwargs, result, breaks.TENSOR_VALUE_READ)
            return result
        if any(isinstance(value, torch.Generator) for value in (*args, *kwargs.values())):
            # ``torch.randn(n, generator=g)``: the generator's state is outside the graph
            # and advances with each draw, so the draw runs on it every call (once: a
            # replay that missed after drawing hands this run its draw).
            index = len(self.tape.callouts)
            result = self.injected.pop(index) if index in self.injected else func(*args, **kwargs)
            self.torch_callout(
                func, args, kwargs, result, breaks.UNKNOWN_NATIVE_CALL, effectful=True
            )
            return result
        if name not in _HIDDEN_STATE_CALLS and any(
            map(_per_element_function, (*args, *kwargs.values()))
        ):
            # ``y.apply_(lambda v: v * 2)``, ``map_``, ``map2_``: torch calls the function
            # once per element from C, unobserved, and no graph node can hold it.
            label = f"Tensor.{name}" if "Tensor" in getattr(func, "__qualname__", "") else name
            self.refuse(f"{label} calls a Python function torch runs unobserved (per element)")
            return func(*args, **kwargs)
        # ``x.reshape(shape)``, ``F.pad(x, cfg["pad"])``, ``torch.tensor(WEIGHTS)``, and
        # inside an index the call built (``x[:, IDX]``): torch reads a list from outside
        # item by item, unobserved; the graph bakes them in.
        self._read_arguments((*args, *kwargs.values()))
        tensors = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
        versions = [tensor_version(t) for t in tensors]
        try:
            if self.shapes is not None and self.shapes.live and holds_size((args, kwargs)):
                # The graph gets the sizes' expressions; the real call their numbers.
                real_args, real_kwargs = plain((args, kwargs))
                result = func(*real_args, **real_kwargs)
            else:
                result = func(*args, **kwargs)
        except Exception as error:
            # Whether a torch op raises can depend on exact sizes (a view that fails for
            # some shapes): a run whose program caught one does not serve other sizes.
            self.size_reads += 1
            raising_calls.raised(self, func, name, args, kwargs, error)
            raise
        if self.tape.unsupported is not None:
            return result
        mutated = [t for t, v in zip(tensors, versions) if tensor_version(t) != v]
        mutated += [t for t in unversioned_updates(func, args, kwargs) if not _among(t, mutated)]
        mutated += [t for t in schema_updates(func, args, kwargs) if not _among(t, mutated)]
        try:
            if name in _HIDDEN_STATE_CALLS or prop in _HIDDEN_STATE_CALLS:
                # Not a function of what the guard checks (memory addresses, autograd
                # flags, hooks): replayed each call, its result checked where it is read.
                self.torch_callout(
                    func,
                    args,
                    kwargs,
                    result,
                    breaks.AUTOGRAD_STATE_CALL,
                    effectful=name in _HIDDEN_STATE_EFFECTS,
                )
            elif _contains_tensor(result) or (mutated and (result is None or result == ())):
                if name in _POWER_OPS:
                    self._integer_power_condition(args)
                self.tape.record_op(func, args, kwargs, result, mutated)
                if sized_by_data:
                    data_dependent.mark(self.tape, result)
            elif name in VALUE_READS:
                self.torch_callout(func, args, kwargs, result, breaks.TENSOR_VALUE_READ)
            elif name in _SIZE_READS or prop in _SIZE_READS or name == "dim_order":
                if name in ("stride", "dim_order"):
                    self._strides_read(args)
                symbolic = self._symbolic_size(getset_descriptor_name(func) or name, args, result)
                if symbolic is None:
                    self.size_reads += 1  # Python now depends on a size: no dynamic shapes
                else:
                    result = symbolic
            elif mutated:  # an update no graph node would make: never dropped silently
                self.refuse(
                    f"{name} updates tensors in place and returns a {type(result).__name__}"
                )
        except Unsupported as error:
            self.tape.unsupported = error
            self.unsupported.append(
                self.locate(function_name=name, category=error.category, detail=error.detail)
            )
        except speculation.SpeculationBlocked:
            raise  # a path run reached an eager call: it ends there
        except Exception as error:  # noqa: BLE001 - a fullgraph bug: the program goes on
            self.refuse(f"internal error in fullgraph's capture of {name}: {error!r}")
        return result

    def _read_arguments(self, values: tuple, depth: int = 0) -> None:
        """Lists, tuples and dicts from outside among a torch call's arguments, read
        whole: also inside a tuple, list or slice the program built around them
        (``x[:, IDX]``, ``x[[IDX]]``, ``y[0, IDX] = v``), which has no source itself."""
        for value in values:
            if isinstance(value, (list, tuple, dict)) and id(value) in self.sources:
                self.read_nested(value)  # (a tuple of literals is guarded by value already)
            elif depth < 4 and isinstance(value, (list, tuple)):
                self._read_arguments(tuple(value), depth + 1)
            elif depth < 4 and isinstance(value, dict):
                self._read_arguments(tuple(value.values()), depth + 1)
            elif depth < 4 and isinstance(value, slice):
                self._read_arguments((value.start, value.stop, value.step), depth + 1)

    # -- sizes ---------------------------------------------------------------
    def size_generic(self) -> bool:
        """Whether the record may serve other input sizes (no size was baked in)."""
        return self.size_reads == 0 and (self.shapes is None or self.shapes.active)

    def _static_size(self, name: str, args: tuple, kwargs: dict) -> bool:
        """Whether a split/unbind/iteration works along a dimension whose size doesn't vary
        (then its number of outputs doesn't either)."""
        if self.shapes is None or not self.shapes.active or not args:
            return False
        if not isinstance(args[0], torch.Tensor):
            return False
        position = 1 if name in ("unbind",) else 2
        dim = kwargs.get("dim", args[position] if len(args) > position else 0)
        if name == "__iter__":
            dim = 0
        if not isinstance(dim, int) or isinstance(dim, (bool, SizeInt)):
            return False
        try:
            fake = self.tape.fake_of(args[0])
        except Unsupported:
            return False
        if not -fake.dim() <= dim < fake.dim():
            return False
        return not torch_internals.is_symbolic(fake.shape[dim])

    def _symbolic_size(self, name: str, args: tuple, result: Any) -> Any:
        """The size(s) the program reads, as SizeInts where they vary (None: can't follow)."""
        shapes = self.shapes
        if shapes is None or not shapes.active or not args or not isinstance(args[0], torch.Tensor):
            return None
        try:
            fake = self.tape.fake_of(args[0])
        except Unsupported:
            return None
        sizes = [shapes.size_of(fake, dim, value) for dim, value in enumerate(args[0].shape)]
        if any(size is None for size in sizes):
            return None
        if name in ("shape", "size") and isinstance(result, torch.Size):
            return torch.Size(sizes)
        if name == "size" and isinstance(result, int):
            dim = args[1] if len(args) > 1 else None
            if isinstance(dim, int) and not isinstance(dim, bool):
                return sizes[dim]
            return None
        if name == "__len__" and sizes:
            # len() turns whatever __len__ returns into a plain int: the number is used
            # as it is, so the record holds only for it (F73).
            return None if isinstance(sizes[0], SizeInt) else result
        if name in ("numel", "nelement"):
            total = 1
            for size in sizes:
                total = total * size
            return total
        if not any(isinstance(size, SizeInt) for size in sizes):
            return result  # stride() and the like of a tensor whose sizes don't vary
        return None

    def _strides_read(self, args: tuple) -> None:
        """``x.stride()`` of a tensor from outside: the guard compares every stride of
        it, a size-1 dimension's too (which it leaves out otherwise: no kernel uses it,
        but the program now does).  The strides of a tensor the call computed
        (``(x + 1).stride()``, ``empty_like(x)``, ``x.transpose(0, 1)``) follow those of
        the tensors it came from, size-1 dimensions' included: every tensor from
        outside is then compared whole."""
        tensor = args[0] if args else None
        if not isinstance(tensor, torch.Tensor):
            return
        if id(tensor) in self.entry_meta:
            read = [id(tensor)] if 1 in tensor.shape else []
        else:
            read = list(self.entry_meta)
        for key in read:
            meta = self.entry_meta[key]
            if 1 in meta.shape and not meta.strides_read:
                self.entry_meta[key] = dataclasses.replace(meta, strides_read=True)

    def _integer_power_condition(self, args: tuple) -> None:
        """``int_tensor ** n`` raises for a negative ``n``: a lifted ``n`` holds the record
        only while it is not negative (the graph would compute garbage instead)."""
        if len(args) != 2 or type(args[1]) is not int or not isinstance(args[0], torch.Tensor):
            return
        if args[0].is_floating_point() or args[0].is_complex():
            return
        sym = self.pending_lifts.get(id(args[1]))
        if sym is not None:
            self.add_condition(Condition(Op(args[1] >= 0, "({0} >= 0)", (sym,)), "truth", True))

    def torch_callout(self, func, args, kwargs, result, category, effectful=False) -> None:
        if self.branching is not None:  # a path run: what it does next would be speculative
            raise speculation.SpeculationBlocked(f"calls {getattr(func, '__name__', func)}")
        name = (
            "Tensor." + getattr(func, "__name__", "?")
            if _is_method(func)
            else annotation_table.qualified_name(func)
        )
        changed_arguments.note_returned(self, result, name)  # ``ids.tolist()``
        try:
            self.tape.record_callout(
                func,
                name,
                tuple(args),
                dict(kwargs),
                result,
                category,
                effectful=effectful,
                guard_result=not effectful,
            )
        except Unsupported as error:
            self.tape.unsupported = error
            self.unsupported.append(
                self.locate(function_name=str(func), category=error.category, detail=error.detail)
            )


def _makes_a_leaf(func, name: str, args: tuple, kwargs: dict, made_here) -> bool:
    """A call that sets a tensor's requires_grad flag or makes a tensor that requires grad.

    Setting the flag a tensor the current graph made already has changes nothing
    (``pe[:n].requires_grad_(False)`` in a forward): no split.  Whether it has it is
    decided by what the guard checks (the inputs' flags, grad mode).  On a tensor from
    outside it is always a callout: a replay that flagged an argument and then missed
    leaves it flagged, and the monitoring run after it must make the same callouts
    (their results are handed over by position)."""
    if not args or not isinstance(args[0], torch.Tensor):
        return kwargs.get("requires_grad") is True
    if name == "requires_grad_":
        flag = args[1] if len(args) > 1 else kwargs.get("requires_grad", True)
        return not (made_here(args[0]) and type(flag) is bool and flag == args[0].requires_grad)
    if name == "__set__":  # a property's setter: (tensor, value)
        if getset_descriptor_name(func, "__set__") != "requires_grad" or len(args) != 2:
            return False
        flag = args[1]
        return not (made_here(args[0]) and type(flag) is bool and flag == args[0].requires_grad)
    return kwargs.get("requires_grad") is True


def _among(tensor: torch.Tensor, tensors: list) -> bool:
    return any(tensor is t for t in tensors)


def _contains_tensor(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return True
    if isinstance(value, (tuple, list, dict)):
        return any(
            _contains_tensor(v) for v in (value.values() if isinstance(value, dict) else value)
        )
    return False


def _is_method(func) -> bool:
    return getattr(func, "__qualname__", "").startswith(("TensorBase.", "Tensor."))


_PACKED_RNN_OPS = frozenset(["gru", "lstm", "rnn_tanh", "rnn_relu", "_pad_packed_sequence"])


def _packed_sequence_call(name: str, args: tuple) -> bool:
    """An RNN op on a packed sequence (or its unpacking): it reads the batch sizes'
    values, so what it computes and returns depends on the data."""
    if name not in _PACKED_RNN_OPS or len(args) < 2:
        return False
    sizes = args[1]
    return isinstance(sizes, torch.Tensor) and sizes.dim() == 1 and sizes.dtype == torch.int64


_FACTORIES = frozenset(["zeros", "ones", "empty", "full", "rand", "randn", "randint"])


def _size_from_tensor(name: str, args: tuple) -> bool:
    """``torch.zeros(1, batch_sizes[0], 6)``: a tensor used as a size (torch reads its
    value), so the result's shape depends on data."""
    if name not in _FACTORIES:
        return False
    sizes = args[0] if len(args) == 1 and isinstance(args[0], (tuple, list)) else args
    return any(isinstance(size, torch.Tensor) for size in sizes)


def _from_array(name: str, args: tuple) -> bool:
    """``torch.tensor(arr)``, ``torch.from_numpy(arr)``: a numpy array's values (which
    the program may change between calls) are no graph constant: made eagerly."""
    if name not in ("tensor", "as_tensor", "asarray", "from_numpy") or not args:
        return False
    return any(type(leaf).__module__ == "numpy" for leaf in tree_flatten(args[0])[0])


def _has_mask_index(args: tuple) -> bool:
    if len(args) < 2:
        return False
    index = args[1]
    items = index if isinstance(index, tuple) else (index,)
    return any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in items)


def _per_element_function(value: Any) -> bool:
    """A Python callable handed to a torch call (not a class, tensor or module)."""
    return callable(value) and not isinstance(value, (type, torch.Tensor, torch.nn.Module))
