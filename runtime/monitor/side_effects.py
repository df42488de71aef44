"""Side effects: the external objects a monitoring run changed, for the mock to replay.

Mixed into :class:`~fullgraph.runtime.monitor.run.MonitorRun`: attribute and
item stores, globals, cells and in-place operators on objects from outside
become :class:`~fullgraph.runtime.monitor.state.Mutation` entries; what was
written is remembered so later reads in the same run are not taken for reads
of the state at entry.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import torch

from fullgraph.runtime.capture.segments import Unsupported
from fullgraph.runtime.capture.values import views_tensor_memory
from fullgraph.runtime.monitor import stored_state, user_code
from fullgraph.runtime.monitor.state import Mutation, state_group
from fullgraph.runtime.monitor.stored_state import current_state
from fullgraph.runtime.record.codegen import is_literal
from fullgraph.runtime.sources import (
    AttrSource,
    ContainsSource,
    HasAttrSource,
    LenSource,
    Source,
    is_key_representable,
)
from fullgraph.runtime.symbolic.sizes import SizeInt, flat_numbers, holds_size, plain

# Tensor attributes whose assignment changes the tensor for later calls (``p.data = ...``).
_TENSOR_STATE = ("data", "grad", "requires_grad")


class SideEffects:
    """Stores into external state, in the order the mock replays them."""

    def store_attr(
        self, owner: Any, name: str, delete: bool = False, value: Any = None, direct: bool = False
    ) -> None:
        """``direct``: ``object.__setattr__``, which runs no setter of the class."""
        if not direct and user_code.store_runs_user_code(owner, name, delete):
            # ``s.v = n`` / ``del s.v`` runs the class's setter / deleter / ``__delattr__``,
            # stepped into: its stores are the effects.
            return
        source = self.source_of(owner)
        if name == "__dict__" and source is not None:
            # ``o.__dict__ = {...}``: every attribute read after it is the new dict's.
            self.refuse(f"{source.expr()}.__dict__ replaced")
            return
        if delete and source is not None and (id(owner), name) not in self.written:
            # ``del h.tmp`` raises where the attribute is gone; the mock removes it only
            # where it is there (a store of the call before it, or the caller's).  An
            # instance attribute is looked for in ``__dict__``: ``hasattr`` would run a
            # ``cached_property`` the deletion invalidates.
            state = getattr(owner, "__dict__", None)
            if not isinstance(owner, torch.nn.Module) and isinstance(state, dict) and name in state:
                self.read(
                    ContainsSource(AttrSource(source, "__dict__"), name), True, symbolic=False
                )
            else:
                self.read(HasAttrSource(source, name), True, symbolic=False)
        self.mark_written(owner, name)
        if delete and stored_state.read_after_delete_is_outside(owner, name):
            # ``del cfg.scale`` uncovers ``Cfg.scale``: a later read is of the caller's state
            # (the instance's ``__dict__`` no longer holding it stays the run's).
            self.written.discard((id(owner), name))
        if isinstance(owner, torch.Tensor):
            if name == "data" and isinstance(value, torch.Tensor):
                return  # recorded when the store runs (``store_data``, from the torch mode)
            user_attribute = not hasattr(type(owner), name)
            if source is None and (name in _TENSOR_STATE or user_attribute):
                source = self.resolve_external(owner)
            if source is None and user_attribute:
                # ``y.tag = ...`` on a tensor the function made: it may be returned or
                # kept, and a replay's tensors (graph outputs) would not carry it.
                self.refuse(f"attribute {name!r} set on a tensor the function made")
                return
            if source is None or not (name in _TENSOR_STATE or user_attribute):
                return  # torch's own flags of intermediate tensors die with them
        if source is not None:
            mutation = Mutation("delattr" if delete else "setattr", source, owner, name)
            if isinstance(owner, torch.Tensor) and name == "grad" and not delete:
                # ``w.grad = None`` before ``backward()``: the state it leaves is the stored
                # value (backward then sets ``grad`` where the monitor does not see it).
                mutation.snapshot = ("value", value)
            self._mutate(mutation)

    def object_slot_call(self, fn: Any, name: str, args: tuple, result: Any) -> Any:
        """``object.__setattr__(self, n, v)`` or ``super().__setattr__(n, v)`` (bound: its
        receiver is ``fn.__self__``) inside a class's own attribute method: the store or
        read itself, which runs no method of the class.  May return an after-phase."""
        receiver = getattr(fn, "__self__", None)
        if receiver is not None and not isinstance(receiver, type):
            args = (receiver, *args)  # ``super().__setattr__``: a bound method-wrapper
        if len(args) < 2 or not isinstance(args[1], str):
            return None
        owner, attr = args[0], args[1]
        if name in ("__setattr__", "__delattr__"):
            value = args[2] if len(args) > 2 else None
            self.store_attr(owner, attr, name == "__delattr__", value, direct=True)
            return None
        return lambda: self.getattr_read(getattr, owner, attr, result())

    def store_data(self, owner: torch.Tensor, value: torch.Tensor) -> None:
        """``p.data = v``: recorded as the in-place update ``p.copy_(v)`` in the graph, so
        later ops in the same run see the new values and the mock writes them back."""
        if (owner.shape, owner.dtype, owner.device) != (value.shape, value.dtype, value.device):
            self.refuse("`.data` assigned a tensor of another shape, dtype or device")
            return
        try:
            with torch.no_grad():
                self.tape.record_op(torch.Tensor.copy_, (owner, value), {}, owner, [owner])
        except Unsupported as error:
            self.tape.unsupported = error
            self.unsupported.append(self.locate("Tensor.data", error.category, error.detail))

    def pin_stored(self, owner: Any, key: Any) -> bool:
        """Whether ``owner``'s ``key`` holds what the run stored, read back by code not
        followed (``sum(window)``): a number stored as a symbol is then pinned."""
        if (id(owner), key) not in self.written:
            return False
        for stored in self.stored_entries((id(owner), key)):
            self.concretize(stored[1])
        return True

    def list_slot(self, container: Any, key: Any) -> Any:
        """``window[-1]`` of a list: its slot from the front (``window[2]``), so a store
        and a read under either index (or ``sum(window)``) meet; the length that makes
        them one slot is guarded."""
        if type(container) is not list or type(key) is not int or key >= 0:
            return key
        source = self.source_of(container)
        if source is not None and -len(container) <= key:
            self.read(LenSource(source), len(container), symbolic=False)
        return key % len(container) if -len(container) <= key else key

    def holds_stored(self, container: Any) -> bool:
        """A list holding an item the run stored (``v in window`` after ``window[1] =
        loss`` reads its items as they are now, the stored one pinned)."""
        return isinstance(container, list) and any(
            (id(container), i) in self.written for i in range(len(container))
        )

    def stored_entries(self, key: tuple) -> list:
        """``store_syms``' entries (value, Sym) for the slot ``key`` names, under its other
        name too (``stats.n`` and the global ``n`` of ``stats``' functions): a store
        under one name leaves the other's entry behind, so a load takes the entry whose
        value it loaded."""
        keys = (key, self.written_aliases.get(key))
        return [self.store_syms[k] for k in keys if k is not None and k in self.store_syms]

    def mark_written(self, owner: Any, key: Any) -> None:
        """``owner``'s ``key`` holds what the run stored, under its other name too: an
        attribute is an item of the object's ``__dict__`` (``vars(args)["lr"]``), a
        global an attribute of its module (``sys.modules[__name__].K``)."""
        self.written.add((id(owner), key))
        if isinstance(owner, dict):
            other = self._namespace_owner(owner)
        else:
            try:
                other = object.__getattribute__(owner, "__dict__")
            except (AttributeError, TypeError):
                other = None
            other = other if isinstance(other, dict) else None  # (a class's is a proxy)
        if other is not None:
            self.written.add((id(other), key))
            self.written_aliases[(id(other), key)] = (id(owner), key)

    def namespace_changed(self, namespace: dict, method: str, args: tuple, kwargs: dict) -> None:
        """``vars(args).update(scale=2.0)``, ``obj.__dict__.update(cfg)``: a dict method
        changing an object's ``__dict__`` (a module's namespace) changes its attributes,
        which later reads must take as the run's.  Keys ``update`` / ``setdefault`` name
        are marked as stored; a method that may remove or replace any other refuses."""
        owner = self._namespace_owner(namespace)
        if owner is None:
            return
        keys = list(kwargs)
        where = self.source_of(namespace)
        where = where.expr() if where is not None else f"the namespace of {owner!r}"[:80]
        if method == "update" and len(args) <= 1:
            if args and not isinstance(args[0], Mapping):
                self.refuse(f"update of {where} with pairs")
                return
            keys += list(args[0].keys()) if args else []
        elif method == "setdefault" and args:
            if args[0] not in namespace:  # (one there is left as it is: read, not stored)
                keys.append(args[0])
        else:
            self.refuse(f"{method} of {where} changes attributes")
            return
        for key in keys:
            self.mark_written(owner, key)

    def _namespace_owner(self, namespace: dict) -> Any:
        """The object (or module) whose ``__dict__`` ``namespace`` is, where known."""
        module = self.module_namespaces.get(id(namespace))
        if module is not None:
            return module
        source = self.source_of(namespace)
        if isinstance(source, AttrSource) and source.name == "__dict__":
            return self.source_values.get(source.base)
        module = sys.modules.get(namespace.get("__name__")) if "__name__" in namespace else None
        if module is not None and getattr(module, "__dict__", None) is namespace:
            return module
        return None

    def store_item(self, container: Any, key: Any, delete: bool = False) -> None:
        if isinstance(container, torch.Tensor):
            return  # Tensor.__setitem__ is an in-place graph op
        if views_tensor_memory(container):  # ``a = x.numpy(); a[1] = -1``: writes x
            self.refuse("a store into a numpy array that shares a tensor's memory")
            return
        method = getattr(type(container), "__delitem__" if delete else "__setitem__", None)
        if user_code.is_program_function(method):
            # ``log[k] = v`` runs the class's own method, stepped into: its stores are the
            # effects (replaying the store too would run the method a second time).  The
            # key is not marked written here: the method may read it first (a meter
            # adding to what it holds), and may store it elsewhere.
            return
        source = self.source_of(container)
        if isinstance(key, slice):  # xs[1:] = ...: the list changes wholesale
            self.written_containers.add(id(container))
            if source is not None:
                self.refuse(f"slice assignment into {source.expr()}, which came from outside")
            return
        if (
            delete
            and isinstance(container, dict)
            and key in container
            and (id(container), key) not in self.written
        ):
            # ``del d["a"]`` raises when the key is gone: a call without it is another
            # (unless the run stored the key itself: ``d["tmp"] = v; ...; del d["tmp"]``).
            self.read_membership(container, key, True)
        key = self.list_slot(container, key)  # (the mock stores ``window[2]``: length guarded)
        self.mark_written(container, key)
        if source is None:
            return
        if self.shapes is not None and holds_size(key):
            # ``cache[x.shape[0]] = ...``, ``cache[tuple(x.shape)] = ...``: an entry for
            # these sizes (guarded from now on), keyed by plain ints when the run ends
            # (ShapeTracker.close).
            for size in flat_numbers(key):
                if isinstance(size, SizeInt):
                    self.shapes.concretize(size)
            key = plain(key)
        if not is_key_representable(key):
            self.refuse(f"store into {source.expr()} with a key of type {type(key).__name__}")
            return
        self._mutate(Mutation("delitem" if delete else "setitem", source, container, key))

    def store_inplace(self, container: Any, method: str, operand: Any) -> None:
        """An in-place operator on a container (``log += [v]``): replayed as the call."""
        self.written_containers.add(id(container))
        if user_code.is_program_function(getattr(type(container), method, None)):
            return  # the class's own ``__iadd__``, stepped into: its stores are the effects
        source = self.source_of(container)
        if source is None:
            return
        if not is_literal(operand) or id(operand) in self.container_syms:
            # Its items came from this run (a tensor, a value read from tensor data):
            # the mock could only write this run's values.
            self.refuse(f"in-place {method} on {source.expr()} with values the function computed")
            return
        self._mutate(Mutation("call", source, container, method, (operand,), {}))

    def inplace_unseen(self, target: Any, method: str | None) -> None:
        """``self.layers += [m]`` on a ``ModuleList``, ``buf += more`` on an
        ``array.array``: an in-place operator of a library or C class, which changes an
        object from outside where the monitor does not see (no store to replay)."""
        if isinstance(target, torch.Tensor):
            return  # captured by the torch mode
        found = getattr(type(target), method, None) if method else None
        if found is None or user_code.is_program_function(found):
            return  # rebinds the name to a new object, or the program's method (stepped into)
        source = self.source_of(target)
        if source is not None:
            self.refuse(f"{method} of {type(target).__name__} changes {source.expr()} unseen")

    def store_global(self, globals_dict: dict, name: str) -> None:
        self.mark_written(globals_dict, name)
        from fullgraph.runtime.sources import ConstSource

        self._mutate(
            Mutation("setglobal", ConstSource(self.globals_name(globals_dict)), globals_dict, name)
        )

    def mutate_cell(self, source: Source, cell: Any) -> None:
        self._mutate(Mutation("setcell", source, cell))

    def _mutate(self, mutation: Mutation) -> None:
        """Append ``mutation`` in program order.  Another store of the same thing before
        the next callout (``d[k] = a; d[k] = b``) is the same effect; a store after a
        callout is a new one, and the state each earlier store of that owner left is
        kept first (the mock applies each where it was made, with that state)."""
        mutation.position = len(self.tape.callouts)
        slot = (id(mutation.owner), mutation.name)
        if mutation.kind in ("delitem", "delattr"):
            self.deleted_slots.add(slot)
        elif mutation.kind in ("setitem", "setattr") and slot in self.deleted_slots:
            # ``del batch[k]; batch[k] = v``: the key moves to the end of the dict's order,
            # the mock's one store of the final value would leave it in place.
            self.refuse(f"{mutation.describe()} after its delete (it moves to the end)")
        self.effects_made += 1  # also when merged below: a program hook's store counts
        group = state_group(mutation)
        if group in ("attr", "item", "cell"):  # (a cell's store has no name: None)
            mutation.sym_entry = self.store_syms.get((id(mutation.owner), mutation.name))
        last = next((m for m in reversed(self.mutations) if m.owner is mutation.owner), None)
        if (
            last is not None
            and group is not None
            and state_group(last) == group
            and _same_name(last.name, mutation.name)
            and last.position == mutation.position
        ):
            last.sym_entry = mutation.sym_entry  # its state is still the run's to come
            last.snapshot = mutation.snapshot  # (one taken at the store: the later store's)
            return
        for existing in self.mutations:
            if (
                existing.owner is mutation.owner
                and existing.snapshot is None
                and state_group(existing) is not None
            ):
                existing.snapshot = current_state(existing)  # before this change is made
        self.keepalive.append(mutation.owner)
        self.mutations.append(mutation)


def _same_name(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b
