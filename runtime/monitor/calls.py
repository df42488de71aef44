"""Calls in user code to code the monitor does not step into.

The annotation table decides: a pure call may still *read* its arguments
(``len(xs)``, ``d.get(k)``, ``getattr(obj, name)``) and those reads are
guarded; a mutating call on an external container is replayed by the mock;
a call that makes an iterator keeps the items' sources; a dynamic call
becomes a *callout* (the graph is split around it and it is replayed
eagerly).  Mixed into :class:`~fullgraph.runtime.monitor.run.MonitorRun`.
"""

from __future__ import annotations

import builtins
import functools
import types
from collections.abc import Callable, Iterator
from typing import Any

import torch

from fullgraph.runtime import breaks, cpython
from fullgraph.runtime.capture import custom_functions, higher_order
from fullgraph.runtime.monitor import (
    annotation_table,
    attribute_hooks,
    autograd_calls,
    class_slots,
    context_entry,
    context_vars,
    handed_callables,
    hidden_state_reads,
    hook_sources,
    module_calls,
    module_walks,
    speculation,
    symbolic_calls,
    training_switch,
    unobserved_reads,
)
from fullgraph.runtime.monitor.callouts import Callouts, argument_syms
from fullgraph.runtime.monitor.state import FrameState, Mutation
from fullgraph.runtime.monitor.user_code import (
    compiled_inner_target,
    constructs_here,
    is_user_code,
    steps_into,
)
from fullgraph.runtime.sources import (
    AttrSource,
    HasAttrSource,
    IdSource,
    LenSource,
    TypeOfSource,
    is_key_representable,
)
from fullgraph.runtime.symbolic import size_pinning, sizes


class CallHandling(Callouts):
    """Calls the monitor does not step into: pure, mutating, iterating, or dynamic."""

    def call(
        self,
        state: FrameState,
        fn: Any,
        args: tuple,
        kwargs: dict,
        result: Callable,
        fn_depth: int = 0,
    ) -> Callable | None:
        handed = module_calls.guard_handed_modules(self, fn, args, kwargs)
        after = self._call(state, fn, args, kwargs, result, fn_depth)
        if handed is not None:  # ``functional_call(m, ...)``: m's stores, then fn's own
            after = module_calls.chained(handed, after)
        if fn is not builtins.__build_class__:
            return after

        def made_class() -> None:  # its attribute hooks: the program's alone from now on
            if after is not None:
                after()
            self.hooks.adopt(result())

        return made_class

    def _call(
        self,
        state: FrameState,
        fn: Any,
        args: tuple,
        kwargs: dict,
        result: Callable,
        fn_depth: int = 0,
    ) -> Callable | None:
        target = fn.__func__ if isinstance(fn, types.MethodType) else fn
        if attribute_hooks.original_of(target) is not target:
            # ``obj.__getattr__(name)`` called during the run: the program's own hook, stepped into.
            original = attribute_hooks.original_of(target)
            if target is not fn:
                original = types.MethodType(original, fn.__self__)
            self.keepalive.append(original)
            cpython.replace_stack_item(state.frame, fn_depth, original)
            return None
        # ``len(b)``, ``b(x)``, ``Box(v)``: methods found on a class of the program.
        class_slots.read_call(self, fn, args)
        what = speculation.call_effect(self, fn, args, kwargs)
        if what is not None and self.speculating is None:
            self.refuse(what)  # a replay makes no such object: its finalizer would never run
        elif what is not None:
            speculation.block(self, state.frame, fn_depth, what)
            return None
        if isinstance(fn, autograd_calls.distributed_wrappers()):
            # ddp(x): its bookkeeping (the gradient all-reduce it prepares) is not in
            # any graph, so the whole call is replayed as it is, every time.
            self.note_state_change((type(fn),), type(fn).__name__)
            return self._replayed_callout(
                state, fn, args, kwargs, _AUTOGRAD_STATE, result, fn_depth
            )
        inner = compiled_inner_target(fn)
        if inner is not None:  # another compiled function: its code, observed here
            compiled, inner = inner
            compiled_source = self.source_of(compiled)
            if compiled_source is not None:  # its module's weights get sources
                self.read(AttrSource(compiled_source, "fn"), compiled.fn)
            cpython.replace_stack_item(state.frame, fn_depth, inner)
            return self.call(state, inner, args, kwargs, result, fn_depth)
        if isinstance(fn, (torch.jit.ScriptModule, torch.jit.ScriptFunction)):
            self.refuse(
                f"{type(fn).__name__} (torch.jit.script) runs TorchScript the monitor can't see"
            )
            return None
        if isinstance(fn, torch.nn.Module):
            hook_sources.guard_global_hooks(self)  # every module's __call__ runs them
            source = self.source_of(fn)
            if source is None:
                return module_calls.guard_pathless_module(self, fn)
            after = module_calls.guard_called_module(self, fn, source)
            if module_calls.takes_fast_path(fn):  # eager's fused path: Module.__call__(path)
                call = module_calls.without_torch_function(fn)
                self.keepalive.append(call)
                cpython.replace_stack_item(state.frame, fn_depth, call)
                callout = self._replayed_callout(
                    state,
                    torch.nn.Module.__call__,
                    (fn, *args),
                    kwargs,
                    _FAST_PATH,
                    result,
                    fn_depth,
                )
                return module_calls.chained(after, callout)
            return after
        if isinstance(fn, functools.partial) and self.source_of(fn) is not None:
            # A partial from outside: its function, arguments and keywords decide the
            # call, so they are guarded like the compiled function's own.
            source = self.source_of(fn)
            self.register_callable(fn, source)
            self.read(AttrSource(source, "func"), fn.func, symbolic=False)
        if custom_functions.is_context_method(fn):
            return None  # ``ctx.save_for_backward(x)`` on the capture's stand-in ctx
        if autograd_calls.is_custom_function_apply(fn, args) and autograd_calls.needs_grad(
            args, kwargs
        ):
            if self.tape is self.main_tape and custom_functions.capturable(fn, args, kwargs):
                # Forward and backward both go into the graph (capture/custom_functions.py).
                replacement = custom_functions.capture_for(self, fn, args)
                self.keepalive.extend((fn, replacement))
                cpython.replace_stack_item(state.frame, fn_depth, replacement)
                return None
            # Its outputs carry the user's backward: the call runs as it is, every time.
            return self._replayed_callout(
                state, fn, args, kwargs, _CUSTOM_FUNCTION, result, fn_depth
            )
        if fn is torch.autograd.Variable and autograd_calls.detaching_variable(args, kwargs):
            # The legacy wrapper is native code the capture can't see: it is t.detach().
            cpython.replace_stack_item(state.frame, fn_depth, autograd_calls.legacy_variable)
            return None
        if higher_order.is_cond(fn):
            # Eager torch.cond would compile its branches with Dynamo; capture them instead.
            replacement = functools.partial(higher_order.capture_cond, self)
            self.keepalive.extend((fn, replacement))
            cpython.replace_stack_item(state.frame, fn_depth, replacement)
            return None
        if autograd_calls.is_autograd_state_call(fn, args):
            switch = training_switch.annotation(self, fn, args, kwargs)
            if switch is None:
                self.note_state_change(
                    autograd_calls.state_changed_by(fn, args), annotation_table.qualified_name(fn)
                )
            annotation = switch or _AUTOGRAD_STATE
            return self._replayed_callout(state, fn, args, kwargs, annotation, result, fn_depth)
        target = fn.__func__ if isinstance(fn, types.MethodType) else fn
        tracker = self.shapes
        if (
            tracker is not None
            and tracker.live
            and not steps_into(fn)
            and not size_pinning.keeps_sizes(fn, args, kwargs)
            and not _replayed(fn, target)
        ):
            # Code that runs only now (its result is kept) may read a size's number.
            tracker.concretize_all((args, kwargs))
        if (
            tracker is not None
            and not steps_into(fn)
            and not size_pinning.keeps_sizes(fn, args, kwargs)
            and size_pinning.has_size_argument(args, kwargs)
        ):
            # Whether it runs now only or is replayed too, it gets the ints eager gives it.
            cpython.replace_stack_item(state.frame, fn_depth, size_pinning.with_plain_sizes(fn))
        if isinstance(target, types.FunctionType) and is_user_code(target.__code__):
            return None
        walk = module_walks.guarding_walk(self, fn, target, args)  # or ``m.state_dict``
        if walk is not None:
            cpython.replace_stack_item(state.frame, fn_depth, walk)
            return None
        if module_walks.reads_tree_unobserved(fn, target, args):
            return self._replayed_callout(
                state, fn, args, kwargs, _UNOBSERVED_READ, result, fn_depth
            )
        if constructs_here(fn):
            known = annotation_table.FUNCTIONS.get(annotation_table.qualified_name(fn))
            if known is not None and known.refuses is not None:  # contextlib.redirect_stdout
                self.refuse(f"{annotation_table.qualified_name(fn)} {known.refuses}")
                return None
            unobserved_reads.read_by_constructor(self, fn, args, kwargs)
            return self._noting_made(None, result, (fn, args, kwargs))
        receiver = getattr(fn, "__self__", None)
        objclass = getattr(fn, "__objclass__", None)
        if isinstance(receiver, torch.Tensor) or (
            isinstance(objclass, type) and issubclass(objclass, torch._C.TensorBase)
        ):
            if getattr(fn, "__name__", "") == "set_":  # torch's function modes never see it
                self.refuse("Tensor.set_ gives a tensor other memory, which no graph records")
            return None  # a tensor method: captured by the mode
        handed_callables.guard(self, fn, args, kwargs)
        if context_entry.builds_a_program_manager(target):
            return None  # its generator runs where the ``with`` enters it, stepped into
        if isinstance(target, types.FunctionType) and annotation_table.lookup(target) is None:
            # Standard-library Python, run unobserved: what it reads must still be guarded.
            everything = (receiver, *args, *kwargs.values())
            if any(self._opaque_external(value) for value in everything):
                # ``os.environ.get(k)``, ``copy.copy(cfg)``: it reads an object from outside
                # that the monitor can't follow into: replayed, its result checked.
                return self._replayed_callout(
                    state, fn, args, kwargs, _UNOBSERVED_READ, result, fn_depth
                )
            for value in everything:
                if isinstance(value, (list, tuple, dict)):
                    self.read_whole(value)
            return None
        annotation = context_vars.annotation_for(self, fn, args, annotation_table.lookup(fn))
        if annotation is None:
            call = getattr(type(fn), "__call__", None)  # noqa: B004
            if isinstance(call, types.FunctionType):  # an object with a Python __call__
                source = self.source_of(fn)
                if source is not None:  # its class's __call__ runs: replaced, another call
                    self.read(AttrSource(TypeOfSource(source), "__call__"), call, symbolic=False)
                return None  # stepped into
            annotation = annotation_table.UNKNOWN_NATIVE
        if annotation.refuses is not None:
            self.refuse(f"{annotation_table.qualified_name(fn)} {annotation.refuses}")
            return None
        name = getattr(fn, "__name__", "")
        view_of = module_walks.module_dict_view(fn, target, name, args)
        if view_of is not None:
            # ``self.heads.items()``: torch's Python, run unobserved; its items keep
            # their sources and the keys are guarded, as for a plain dict.
            return lambda: self.derive_iterator(result(), view_of, name)
        # Library Python annotated pure (``collections.abc.Mapping.get``) still reads its
        # arguments unobserved: an object from outside makes it a callout.
        if (
            annotation.pure
            and isinstance(target, types.FunctionType)
            and any(self._opaque_external(value) for value in (receiver, *args, *kwargs.values()))
        ):
            return self._replayed_callout(
                state, fn, args, kwargs, _UNOBSERVED_READ, result, fn_depth
            )
        if fn is type and len(args) == 1 and isinstance(args[0], sizes.SizeInt):
            cpython.replace_stack_item(state.frame, fn_depth, size_pinning.plain_type)
            return None
        if fn is len and args and size_pinning.follows_len(args[0]):
            # len(x) would make a followed size a plain int: x.size(0) keeps it a SizeInt.
            cpython.replace_stack_item(state.frame, fn_depth, size_pinning.tensor_len)
            return None
        if self.speculating is not None and speculation.changes_outside(
            self, fn, target, (receiver, *args, *kwargs.values()), _mutated_owner, annotation
        ):
            speculation.block(self, state.frame, fn_depth, f"calls {name} on an object")
            return None
        if annotation.pure:
            after = self._pure_call(fn, name, receiver, args, kwargs, annotation, result)
            if isinstance(fn, type):  # a library object made now: a replay has no such object
                return self._noting_made(after, result, (fn, args, kwargs))
            return after
        return self._replayed_callout(state, fn, args, kwargs, annotation, result, fn_depth)

    def _noting_made(self, after: Callable | None, result: Callable, call: tuple) -> Callable:
        """After the call: remember the object it made, how, and how many callouts came
        before it (a warnings block replaces the callouts made since)."""

        def note() -> None:
            if after is not None:
                after()
            made = result()
            self.made_objects[id(made)] = (*call, len(self.tape.callouts))
            self.keepalive.append(made)

        return note

    def _pure_call(self, fn, name, receiver, args, kwargs, annotation, result) -> Callable | None:
        if self.frames and self.frames[-1].call_syms and not kwargs:
            after = symbolic_calls.follow(self, self.frames[-1], fn, args, result)
            if after is not None:  # int(n / 2), np.std(arr), math.sqrt(d) on values that vary
                return after
        if receiver is None and getattr(fn, "__objclass__", None) is not None and args:
            receiver = args[0]  # an unbound method descriptor called with its receiver first
        if fn is next and args and id(args[0]) in self.iterators:
            return self._next_call(args, result)
        if name == "__next__" and isinstance(receiver, Iterator):
            # ``it.__next__()``, as ``next(it)``: one from outside is refused (read_whole)
            if id(receiver) in self.iterators:
                return self._next_call((receiver,), result)
            self.read_whole(receiver)
        hidden_state_reads.read_definition(self, fn, args)  # inspect.signature(h): h's defaults
        hidden_state_reads.read_library_switches(self, fn)  # Distribution._validate_args
        if fn is id and len(args) == 1 and self.source_of(args[0]) is not None:
            # ``cache[id(w)]``: the number stands for the object; the guard re-reads it.
            self.read(IdSource(self.source_of(args[0])), id(args[0]), symbolic=False)
            return None
        if fn is type and len(args) == 1 and self.source_of(args[0]) is not None:
            source = TypeOfSource(self.source_of(args[0]))
            return lambda: self.register(result(), source)  # ``type(self).n += 1``
        if fn is len and args:
            source = self.source_of(args[0])
            if (
                source is not None
                and not isinstance(args[0], torch.Tensor)
                and not self.written_external(args[0])
            ):
                self.read(LenSource(source), len(args[0]))
            return None
        if name == "get" and isinstance(receiver, dict):
            call_args = args[1:] if args and args[0] is receiver else args
            if call_args:
                key = call_args[0]  # whether the key is there decides the result
                self.read_membership(receiver, key, key in receiver)
                if key in receiver:
                    self.read_item(receiver, key, receiver[key])
                    # ``d[k] = d.get(k, 0) + 1``: a counter that varies is followed, as ``d[k]``
                    leaf = self.take_symbolic_read(receiver[key])
                    if leaf is not None and self.frames:
                        self.frames[-1].call_result_sym = leaf
            return None
        if getattr(fn, "__objclass__", None) is object and name in _OBJECT_SLOTS:
            return self.object_slot_call(fn, name, args, result)
        if fn in (getattr, hasattr) and len(args) >= 2 and isinstance(args[1], str):
            owner, attr = args[0], args[1]
            return lambda: self.getattr_read(fn, owner, attr, result())
        if annotation.mutates:
            function = receiver is None or isinstance(receiver, types.ModuleType)
            owner = _mutated_owner(receiver, args, annotation)
            call_args = args[1:] if args and args[0] is owner else args
            if isinstance(owner, dict):
                self.namespace_changed(owner, name, call_args, kwargs)  # ``vars(args).update``
            if name == "setdefault" and isinstance(owner, dict) and call_args:
                return self._setdefault(owner, call_args, result)
            if name in _TAKING_MUTATORS and not kwargs:
                self.read_popped(owner, name, call_args)
            for value in call_args:  # ``t.extend(xs)``, ``d.update(cfg)``: xs is read whole
                if value is not owner and isinstance(value, (list, tuple, dict)):
                    self.read_nested(value)
            self.written_containers.add(id(owner))
            source = self.source_of(owner)
            if fn is setattr and len(args) >= 3:
                self.store_attr(args[0], args[1], value=args[2])
            elif source is not None:
                kind, called = (
                    ("function", fn) if function and fn is not setattr else ("call", name)
                )
                mutation = Mutation(kind, source, owner, called, tuple(args), dict(kwargs))
                state = self.frames[-1] if self.frames else None
                if state is not None and state.call_syms and not kwargs:
                    # Symbolic arguments (``timings.append(t1 - t0)``) stay expressions.
                    mutation.arg_syms = argument_syms(state.call_syms, len(args))
                    state.call_syms = None
                self._mutate(mutation)
            return None
        if annotation.iterates:
            kind = annotation.iterates
            if kind in ("enumerate", "reversed", "iter") and args:
                return lambda: (
                    self.derive_compound(result(), kind, [args[0]])
                    if kind == "enumerate"
                    else self.derive_iterator(result(), args[0], kind)
                )
            if kind == "zip":
                return lambda: self.derive_compound(result(), "zip", list(args))
            if kind in ("items", "values", "keys") and receiver is not None:
                return lambda: self.derive_iterator(result(), receiver, kind)
            return None
        return unobserved_reads.read_by_call(self, fn, receiver, args, kwargs, result)

    def _next_call(self, args: tuple, result) -> Callable:
        """``next(it)`` on an iterator over an outside container: the item keeps its
        source; a StopIteration (or the default) depends on the container's length."""
        iterator = args[0]

        def after() -> None:
            value = result()
            if len(args) > 1 and value is args[1]:
                self.iterator_exhausted(iterator)  # pins the length: it may have run out
            else:
                self.iterator_yielded(iterator, value)

        def on_exception(error: BaseException) -> None:
            if isinstance(error, StopIteration):
                self.iterator_exhausted(iterator)

        after.on_exception = on_exception
        return after

    def _opaque_external(self, value: Any) -> bool:
        """An object from outside whose contents unobserved code could read unguarded."""
        if isinstance(value, _PLAIN_TYPES) or self.source_of(value) is None:
            return False
        return not isinstance(value, (list, tuple, dict, set, frozenset))

    def _setdefault(self, owner: dict, call_args: tuple, result) -> None:
        """``d.setdefault(k, v)``: whether ``k`` was there decides the result; only ``d[k]``
        can change, so the rest of ``d`` stays guarded as read."""
        key = call_args[0]
        source = self.source_of(owner)
        if not is_key_representable(key) or id(owner) in self.written_containers:
            self.written_containers.add(id(owner))
            if source is not None:
                self._mutate(Mutation("call", source, owner, "setdefault", (owner, *call_args), {}))
            return
        present = key in owner
        self.read_membership(owner, key, present)
        if present:
            if not self.pin_stored(owner, key):  # (one the run stored: its number pinned)
                self.read_item(owner, key, owner[key])
            return  # nothing changes
        self.written.add((id(owner), key))
        if source is not None:
            self._mutate(Mutation("setitem", source, owner, key))

    def getattr_read(self, fn, owner, attr, value) -> None:
        source = self.source_of(owner)
        if isinstance(owner, torch.Tensor):
            if hasattr(type(owner), attr):
                return  # torch's own attributes: metadata the capture sees
            source = source or self.resolve_external(owner)  # ``getattr(x, "scale", 1.0)``
        if source is None or self.pin_stored(owner, attr):
            return
        if attribute_hooks.read_through_property(self, owner, source, attr):
            return
        if fn is hasattr:
            self.read(HasAttrSource(source, attr), value)
        elif hasattr(owner, attr):
            self.read_attr(owner, attr, value)
        else:
            self.read(HasAttrSource(source, attr), False)


# Mutating calls whose result is taken from the container (the guard reads it first).
_TAKING_MUTATORS = frozenset(["pop", "popitem", "popleft", "heappop", "heapreplace", "heappushpop"])


def _mutated_owner(receiver: Any, args: tuple, annotation: Any) -> Any:
    """What a mutating call changes: its receiver, or the argument its annotation names."""
    if receiver is not None and not isinstance(receiver, types.ModuleType):
        return receiver
    position = annotation.mutates[0]
    return args[position] if len(args) > position else None


def _replayed(fn: Any, target: Any) -> bool:
    """Whether the call becomes a callout, which the mock makes again with each call's
    arguments (sizes re-read), its result guarded: sizes may go in as they are."""
    if isinstance(target, types.FunctionType) and annotation_table.lookup(target) is None:
        return False  # stdlib Python code, run unobserved now and not again
    if constructs_here(fn):
        return False  # ``Dims(*x.shape)``: made now and kept: the sizes it holds are pinned
    annotation = annotation_table.lookup(fn)
    if annotation is None:
        # An object with a Python __call__ runs now; other unknown native code is a callout.
        return not isinstance(getattr(type(fn), "__call__", None), types.FunctionType)  # noqa: B004
    return not annotation.pure


_AUTOGRAD_STATE = annotation_table.Annotation(pure=False, category=breaks.AUTOGRAD_STATE_CALL)
_CUSTOM_FUNCTION = annotation_table.Annotation(pure=False, category=breaks.CUSTOM_AUTOGRAD_FUNCTION)
# ``object.__setattr__(self, n, v)`` and ``super().__getattribute__(n)`` in a class's own
# attribute methods (monitor/side_effects.py: object_slot_call).
_OBJECT_SLOTS = frozenset(["__getattribute__", "__getattr__", "__setattr__", "__delattr__"])
_UNOBSERVED_READ = annotation_table.Annotation(pure=False, category=breaks.UNKNOWN_NATIVE_CALL)
_FAST_PATH = annotation_table.Annotation(pure=True, category=breaks.UNKNOWN_NATIVE_CALL)

# Values whose every read the guard already covers by identity, type or value.
_PLAIN_TYPES = (
    torch.Tensor,
    torch.nn.Module,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.ModuleType,
    type,
    bool,
    int,
    float,
    complex,
    str,
    bytes,
    type(None),
    torch.dtype,
    torch.device,
)
