"""Provenance: where each value a monitoring run meets came from, and what it read.

Mixed into :class:`~fullgraph.runtime.monitor.run.MonitorRun`, which declares
the state (``sources``, ``reads``, ``aliases``...).  An object from outside the
call gets a :class:`~fullgraph.runtime.sources.Source` (a path from the
function's arguments, globals or module); every external value the program
looks at through one is a *read*, which the guard checks on later calls.
"""

from __future__ import annotations

import collections.abc
import functools
import os
import re
import types
from typing import Any

import torch

from fullgraph.runtime.capture.tensor_meta import TensorMeta
from fullgraph.runtime.capture.values import is_ndarray
from fullgraph.runtime.monitor import (
    attribute_hooks,
    autograd_calls,
    class_slots,
    dict_keys,
    function_reads,
    hook_sources,
    method_lookups,
    parametrized,
)
from fullgraph.runtime.monitor.iteration import (
    MODULE_SEQUENCES,
    SNAPSHOT_ITERABLES,
)
from fullgraph.runtime.monitor.user_code import (
    user_property,
)
from fullgraph.runtime.record.codegen import is_literal
from fullgraph.runtime.sources import (
    AttrSource,
    ContainsSource,
    HasAttrSource,
    ItemSource,
    IterItemsSource,
    KeysSource,
    LenSource,
    LookupSource,
    RootModuleSource,
    Source,
    base_of,
    is_key_representable,
)
from fullgraph.runtime.symbolic.scalars import is_symbolic_number

_SHARED_TYPES = (bool, int, str, type(None), float, bytes)


def _shared(value: Any) -> bool:
    """Values two paths may both reach without being one object the program shares:
    numbers, strings, and immutable literals such as ``()``, which Python interns."""
    if isinstance(value, _SHARED_TYPES):
        return True
    return type(value) in (tuple, frozenset) and is_literal(value)


class Provenance:
    """Sources of external objects and the reads the guard re-checks."""

    def register(self, value: Any, source: Source) -> None:
        if not isinstance(value, _SHARED_TYPES) and id(value) not in self.sources:
            self.sources[id(value)] = source
            self.source_values[source] = value
            self.keepalive.append(value)
            if isinstance(value, torch.Tensor):  # before the call can change it
                meta = TensorMeta.taken(value)
                if meta is not None:
                    self.entry_meta[id(value)] = meta
            elif isinstance(value, types.ModuleType):
                self.module_namespaces[id(value.__dict__)] = value
            elif is_ndarray(value):  # its contents, before ``from_numpy(a).add_(x)`` writes them
                self.entry_arrays[id(value)] = value.copy()
            elif isinstance(value, torch.nn.Module):
                # Its submodules too: code may reach them where no path follows
                # (``for layer in model.layers[:2]``, a slice is a new ModuleList), and
                # a layer called without a source would have its settings unguarded.
                for name, child in value._modules.items():
                    if child is not None:
                        self.register(child, AttrSource(source, name))

    def register_root(self, value: Any, source: Source) -> None:
        known = self.sources.get(id(value))
        if known is not None and not _shared(value):
            # The same object in two places (f(x, x)): the run tracks it as one, so the
            # record holds only while both places still hold one object.
            self.aliases.append((known, source))
        self.reads[source] = value
        self.register(value, source)
        if source in self.varying and is_symbolic_number(value):
            self.symbolic_sources.add(source)

    def register_callable(self, fn: Any, source: Source) -> None:
        """The compiled callable and what it carries: a partial's arguments, a method's self."""
        self.register(fn, source)
        if isinstance(fn, functools.partial):
            self.register_callable(fn.func, AttrSource(source, "func"))
            for i, value in enumerate(fn.args):
                self.register_root(value, ItemSource(AttrSource(source, "args"), i))
            for name, value in fn.keywords.items():
                self.register_root(value, ItemSource(AttrSource(source, "keywords"), name))
            # A keyword or argument added later is another call (``p.keywords["b"] = 1``).
            keywords = tuple(fn.keywords)
            self.read(KeysSource(AttrSource(source, "keywords")), keywords, symbolic=False)
            self.read(LenSource(AttrSource(source, "args")), len(fn.args), symbolic=False)
        elif isinstance(fn, types.MethodType):
            self.register_root(fn.__self__, AttrSource(source, "__self__"))  # its tree too
            # ``compile(model.forward)``: the function's closure cells (a decorator's
            # ``func``) are read through it.
            self.register_callable(fn.__func__, AttrSource(source, "__func__"))
            return
        wrapped = getattr(fn, "__wrapped__", None)
        if wrapped is not None and not isinstance(fn, functools.partial):
            # functools.wraps decorators (torch.inference_mode(), user decorators):
            # the closure cells of the inner function are read through it.
            self.register_callable(wrapped, AttrSource(source, "__wrapped__"))

    def source_of(self, value: Any) -> Source | None:
        return self.sources.get(id(value))

    def globals_name(self, globals_dict: dict) -> str:
        entry = self.globals_consts.get(id(globals_dict))
        if entry is None:
            module = re.sub(r"\W", "_", str(globals_dict.get("__name__", "module")))
            name = f"g_{module}"
            taken = {n for n, _ in self.globals_consts.values()}
            while name in taken:
                name += "_"
            entry = (name, globals_dict)
            self.globals_consts[id(globals_dict)] = entry
        return entry[0]

    def read(self, source: Source, value: Any, symbolic: bool = True) -> None:
        """The program read ``value`` from outside through ``source``.

        ``symbolic=False`` for values consumed where the monitor can't follow
        them (inside a library layer): those are always guarded by value.
        """
        value = attribute_hooks.original_of(value)  # a hook's stand-in: the program's hook
        self._last_read = (source, value)
        if self.late_reads is not None:
            self.late_reads.append((source, value))
        changed_by = self.changed_state and self._reads_changed_state(source)
        if changed_by:
            # The value now comes from state the call changed (lr after
            # scheduler.step(), .training after model.train()): a guard at entry can't
            # vouch for it, and a replay that found it changed could not undo the call.
            self.not_recordable.append(
                f"{source.expr()} read after {changed_by} changed the object it is read from"
            )
        if source in self.reads:
            if not symbolic:
                self.symbolic_sources.discard(source)
            return
        if symbolic and source in self.varying and is_symbolic_number(value):
            self.symbolic_sources.add(source)
        known = self.sources.get(id(value))
        if known is not None and known != source and not _shared(value):
            self.aliases.append((known, source))
            return
        self.reads[source] = value
        self.register(value, source)
        function_reads.register_parts(self, value, source)
        if isinstance(value, types.MethodType):
            # The guard checks the method's function; which object it is bound to is
            # read too (``op = a.apply`` rebound to ``b.apply`` of another instance).
            self.read(AttrSource(source, "__self__"), value.__self__, symbolic=False)

    def note_state_change(self, kinds: tuple, call_name: str) -> None:
        """A replayed call changed the plain state of objects of these kinds."""
        for kind in kinds:
            self.changed_state.setdefault(kind, call_name)

    def read_before(self, kinds: tuple) -> Source | None:
        """A read made so far through state of these kinds (``lr`` read before the
        ``scheduler.step()`` that changes it): a run made again after the call would
        read the changed value instead."""
        changed = dict.fromkeys(kinds, "")
        for source in self.reads:
            if self._reads_changed_state(source, changed) is not None:
                return source
        return None

    def _reads_changed_state(self, source: Source, changed: dict | None = None) -> str | None:
        """The call that changed state ``source`` goes through (an optimizer's
        param_groups after a scheduler step, a module's flags after ``train()``)."""
        changed = self.changed_state if changed is None else changed
        if isinstance(source, LookupSource):
            return None  # a method found on the class (``sched.get_last_lr``): no step changes it
        below, path = source, base_of(source)  # reaching the object itself reads nothing
        while path is not None:
            value = self.source_values.get(path)
            for kind, call_name in changed.items():
                if kind is autograd_calls.OptimizerStepState:
                    if isinstance(value, torch.optim.Optimizer) and below == AttrSource(
                        path, "state"
                    ):
                        return call_name
                elif kind is autograd_calls.SchedulerStepState:
                    if isinstance(value, torch.optim.Optimizer) and below == AttrSource(
                        path, "param_groups"
                    ):
                        return call_name
                elif kind is autograd_calls.ModuleTrainingFlags:
                    if isinstance(value, torch.nn.Module) and below == AttrSource(path, "training"):
                        return call_name
                elif isinstance(value, kind):
                    return call_name
            below, path = path, base_of(path)
        return None

    def loaded_written(self, key: tuple, value: Any) -> None:
        """A load of something the program stored earlier in this run."""
        entries = self.stored_entries(key)
        stored = [e for e in entries if e[0] is value]  # the latest store
        self._last_read = ("stored", stored[0][1], stored[0][0]) if stored else None
        for entry in entries if not stored else ():  # another object (``array.array``): pinned
            self.concretize(entry[1])

    def read_attr(self, owner: Any, name: str, value: Any) -> None:
        if (id(owner), name) in self.written:
            self.loaded_written((id(owner), name), value)
            return
        if not in_instance_dict(owner, name) and self.pin_stored(type(owner), name):
            return  # ``C.last = v`` earlier, read through an instance: pinned
        if isinstance(owner, torch.Tensor):
            if (
                name == "data"
                and isinstance(value, torch.Tensor)
                and id(value) not in self.tape.producer
            ):
                # `p.data` is a new alias each time it is read; an external tensor's
                # alias is itself external (the EMA updates of momentum encoders).
                source = self.source_of(owner) or self.resolve_external(owner)
                if source is not None:
                    self.read(AttrSource(source, "data"), value)
            elif in_instance_dict(owner, name):  # ``x.scale`` set by the caller
                source = self.source_of(owner) or self.resolve_external(owner)
                if source is not None:
                    self.read(AttrSource(source, name), value)
                elif id(owner) in self.tape.producer:  # set on a result, by code not observed
                    self.refuse(f"reads .{name} of a computed tensor, set by its subclass's code")
            return
        if isinstance(owner, super):  # ``super().forward`` (3.11: a super object's attribute)
            method_lookups.read_super_attr(self, owner.__thisclass__, owner.__self__, name, value)
            return
        source = self.source_of(owner)
        if source is None:
            if (
                isinstance(value, types.MethodType)
                and value.__self__ is owner
                or user_property(type(owner), name)
                or not in_instance_dict(owner, name)
            ):  # a method, property or class attribute of an object the call made
                class_slots.read_lookup(self, owner, name)
            return
        if isinstance(owner, types.ModuleType) and name.startswith("__"):
            if name == "__dict__":  # ``mod.__dict__[k] = v``: a store into the module
                self.register(value, AttrSource(source, name))
            return
        if isinstance(value, types.MethodType) and value.__self__ is owner:
            self.read_class_attribute(owner, source, name)
            return  # a method: its function is checked on the owner's class
        if user_property(type(owner), name):
            self.read_class_attribute(owner, source, name)
            return  # its getter is user code: what it reads is guarded as it runs
        if parametrized.computed_by_library_property(self, owner, name, value):
            parametrized.guard(self, owner, source, name)
            return  # ``m.w`` of a parametrization: computed in the graph, every call
        if (
            isinstance(value, types.BuiltinMethodType)
            and value.__self__ is owner
            and not isinstance(owner, types.ModuleType)
            and type(owner).__module__ == "builtins"
        ):
            # ``d.get``, ``xs.append`` of a builtin container: a new bound object each
            # time, decided by the owner's type (guarded), which no one can patch.
            return
        self.read(AttrSource(source, name), value)

    def read_class_attribute(self, owner: Any, source: Source, name: str) -> None:
        """``owner.name`` found a method or property on the class: guard that the class
        still holds the same one, and that no instance attribute shadows it since."""
        if isinstance(owner, (type, types.ModuleType)):
            return  # a class's or module's own attribute: read as a value elsewhere
        if not isinstance(getattr(owner, "__dict__", None), dict):
            return  # no instance dict to shadow it (slots, C types)
        own = owner.__dict__
        if name in own:  # ``model.fc.forward = ...``: the instance's own, which the lookup gives
            self.read(LookupSource(source, name), own[name], symbolic=False)
            return
        try:
            found = getattr(type(owner), name)  # what ClassAttrSource re-reads
        except Exception:  # noqa: BLE001 - a descriptor refusing class access: not guardable
            self.refuse(f"{source.expr()}.{name} found on its class, which can't be re-read")
            return
        self.read(LookupSource(source, name), found, symbolic=False)

    def written_external(self, container: Any) -> bool:
        """Whether ``container`` came from outside and the run changed it wholesale
        (``xs.insert``, ``d.update``...): what it holds now is neither the value at
        entry (which a guard could check) nor one the monitor followed."""
        if id(container) not in self.written_containers:
            return False
        source = self.source_of(container)
        if source is not None:
            self.not_recordable.append(f"{source.expr()} read after a call changed it")
        return True

    def read_item(self, container: Any, key: Any, value: Any) -> None:
        if isinstance(container, torch.Tensor) or self.written_external(container):
            return
        source = self.source_of(container)
        if source is None:
            return
        if isinstance(key, bool):
            form = None
        elif isinstance(container, collections.abc.Mapping):
            form = dict_keys.key_form(self, key)  # a dtype, a class, an Enum member...
        else:
            form = key if is_key_representable(key) else None
        if form is None:
            self.read_whole(container)  # slices and other keys: guard the whole container
            return
        slot = self.list_slot(container, key) if self.holds_stored(container) else key
        if (id(container), slot) in self.written:
            self.loaded_written((id(container), slot), value)
            return
        self.read(ItemSource(source, form), value)

    def read_missing_item(self, container: Any, key: Any, error: BaseException) -> None:
        """``container[key]`` raised: the key (or index) is not there, and the guard says so."""
        if isinstance(container, torch.Tensor) or self.source_of(container) is None:
            return
        if isinstance(error, KeyError) and hasattr(type(container), "__contains__"):
            self.read_membership(container, key, False)  # dicts and Mappings (os.environ)
        elif isinstance(error, IndexError) and isinstance(container, (list, tuple)):
            self.read(LenSource(self.source_of(container)), len(container))
        else:
            self.read_whole(container)

    def read_missing_attr(self, owner: Any, name: str, error: BaseException) -> None:
        """``owner.name`` raised AttributeError: guard that the attribute is still missing."""
        if not isinstance(error, AttributeError):
            return
        source = self.source_of(owner)
        if isinstance(owner, torch.Tensor):
            if hasattr(type(owner), name):
                return  # a torch property that raised: not an attribute the caller sets
            source = source or self.resolve_external(owner)
        if source is not None and not attribute_hooks.read_through_property(
            self, owner, source, name
        ):
            self.read(HasAttrSource(source, name), False)

    def read_membership(self, container: Any, item: Any, result: Any) -> None:
        source = self.source_of(container)
        if source is None or isinstance(container, torch.Tensor):
            return
        if self.written_external(container):
            return
        form = dict_keys.key_form(self, item)
        if form is not None and not self.holds_stored(container):
            self.read(ContainsSource(source, form), result)
        else:
            self.read_whole(container)

    def read_whole(self, container: Any) -> None:
        """The program read all of a container (``sum(xs)``, ``sorted(d)``...)."""
        source = self.source_of(container)
        if source is None or self.written_external(container):
            return
        if isinstance(container, collections.abc.Iterator) and not isinstance(
            container, torch.Tensor
        ):
            # ``sum(it)``, ``next(counter)``: a replay would neither see the items an
            # iterator from outside yields next nor advance it.
            self.refuse(f"{source.expr()} is an iterator from outside the call, advanced by it")
            return
        # Items read wholesale reach the program without a symbol the monitor follows:
        # guarded by value, never lifted.
        if isinstance(container, (list, tuple, *MODULE_SEQUENCES)):
            self.read(LenSource(source), len(container), symbolic=False)
            for i, item in enumerate(container):
                if not self.pin_stored(container, i):
                    self.read(ItemSource(source, i), item, symbolic=False)
        elif isinstance(container, dict):
            keys = tuple(container.keys())
            for key, form in zip(keys, dict_keys.read_keys(self, source, container)):
                if not self.pin_stored(container, key):
                    self.read(
                        ItemSource(source, form), dict.__getitem__(container, key), symbolic=False
                    )
        elif isinstance(container, type(os.environ)):  # ``dict(os.environ)``, ``{**os.environ}``
            keys = tuple(container)
            self.read(IterItemsSource(source), keys, symbolic=False)
            for key in keys:
                self.read(ItemSource(source, key), container[key], symbolic=False)
        elif isinstance(container, SNAPSHOT_ITERABLES) and not isinstance(container, (str, bytes)):
            # sum(a_set), sorted(a_deque)...  (strings are guarded by value already)
            items = tuple(container)
            for i in range(len(items)):  # (a number the run stored there: pinned)
                self.pin_stored(container, i)
            whole = IterItemsSource(source)
            self.read(whole, items, symbolic=False)
            if not is_literal(items):
                for i, item in enumerate(items):
                    self.read(ItemSource(whole, i), item, symbolic=False)

    def read_nested(self, container: Any, depth: int = 0) -> None:
        """read_whole, and the same for the lists and dicts inside it (a list of lists)."""
        self.read_whole(container)
        if depth < 4:
            items = container.values() if isinstance(container, dict) else container
            for item in items:
                if isinstance(item, (list, tuple, dict)) and id(item) in self.sources:
                    self.read_nested(item, depth + 1)

    def read_popped(self, owner: Any, name: str, call_args: tuple) -> None:
        """``stack.pop()``, ``d.pop(k, 0)``, ``d.popitem()`` on a container from outside:
        the item it takes (or the missing key) is read from the container as it is now;
        the mock replays the pop itself."""
        source = self.source_of(owner)
        if source is None or self.written_external(owner):
            return  # changed earlier in this run: the record is refused already
        if isinstance(owner, list) and name == "pop":
            index = call_args[0] if call_args else -1
            self.read(LenSource(source), len(owner), symbolic=False)  # out of range: it raises
            if isinstance(index, int) and -len(owner) <= index < len(owner):
                position = index % len(owner)
                if not self.pin_stored(owner, position):  # (a number the run stored: pinned)
                    self.read(ItemSource(source, position), owner[position], symbolic=False)
        elif isinstance(owner, dict) and name == "pop" and call_args:
            key = call_args[0]  # (a key with no form: both read the whole dict)
            self.read_membership(owner, key, key in owner)
            if key in owner and not self.pin_stored(owner, key):
                self.read_item(owner, key, owner[key])
        else:
            self.read_whole(owner)  # popitem, set.pop: which item depends on all of it

    def resolve_external(self, tensor: torch.Tensor) -> Source | None:
        """Source of a tensor reached inside opaque code (e.g. a torch module's weight)."""
        known = self.sources.get(id(tensor))
        if known is not None:
            return known
        if self._module_index is None:
            self._module_index = {}
            for owner_id, source in list(self.sources.items()):
                owner = next((o for o in self.keepalive if id(o) == owner_id), None)
                self._index_owner(owner, source)
        source = self._module_index.get(id(tensor))
        if source is None:
            # A module or container first seen after the index was built.
            for owner in list(self.keepalive):
                source_of_owner = self.sources.get(id(owner))
                if source_of_owner is not None and isinstance(
                    owner, (torch.nn.Module, list, tuple, dict)
                ):
                    self._index_owner(owner, source_of_owner)
            source = self._module_index.get(id(tensor))
        if source is not None:
            self.read(source, tensor)
        return source

    def _index_owner(self, owner: Any, source: Source) -> None:
        index = self._module_index
        if isinstance(owner, torch.nn.Module):
            for name, tensor in list(owner.named_parameters(remove_duplicate=False)) + list(
                owner.named_buffers(remove_duplicate=False)
            ):
                path = source
                for part in name.split("."):
                    path = AttrSource(path, part)
                index.setdefault(id(tensor), path)
        elif isinstance(owner, (list, tuple)):
            for i, item in enumerate(owner):
                if isinstance(item, torch.Tensor):
                    index.setdefault(id(item), ItemSource(source, i))
        elif isinstance(owner, dict):
            for key, item in owner.items():
                if isinstance(item, torch.Tensor) and is_key_representable(key):
                    index.setdefault(id(item), ItemSource(source, key))

    def register_module_tree(self, module: torch.nn.Module, source: Source) -> None:
        """Give every submodule a source, so reads inside their forward are guarded."""
        if source == RootModuleSource():  # the compiled module's __call__ runs its hooks
            hook_sources.guard_hooks(self, module, source)
        for name, child in module._modules.items():
            if child is not None and id(child) not in self.sources:
                child_source = AttrSource(source, name)
                self.register(child, child_source)
                self.register_module_tree(child, child_source)


def callable_object(fn: Any) -> bool:
    """An instance of a class with ``__call__`` (not a function, method, partial or module)."""
    return not isinstance(
        fn,
        (types.FunctionType, types.MethodType, functools.partial, torch.nn.Module, type),
    ) and isinstance(getattr(type(fn), "__call__", None), types.FunctionType)  # noqa: B004


def in_instance_dict(owner: Any, name: str) -> bool:
    """Whether ``owner.name`` is the object's own attribute (``x.scale = 3.0`` on a
    tensor, not torch's; on an object the call made, not its class's)."""
    try:
        return name in object.__getattribute__(owner, "__dict__")
    except (AttributeError, TypeError):
        return False
