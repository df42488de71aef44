"""One monitoring run: the state built while the real program executes.

The opcode handlers (``opcodes``) and the torch-function mode (``capture``)
report what the program does; this module turns those events into the
*reference graph* facts a record needs:

- sources: which objects came from outside the call, and by which path;
- reads: external values the program looked at (what the guard checks);
- mutations: external objects the program changed (what the mock replays);
- the graph tape (segments and callouts).

Objects are tracked by identity while the run holds a reference to them.
Values the interpreter shares (small ints, interned strings, True/False,
None) are never tracked by identity: a read of one is guarded by value at
the instruction that read it.
"""

from __future__ import annotations

import collections.abc
import dis
import functools
import linecache
import re
import types
from collections.abc import Callable
from typing import Any

import torch

from fullgraph.runtime import breaks, torch_internals
from fullgraph.runtime.capture.mode import DATA_DEPENDENT, VALUE_READS, CaptureMode
from fullgraph.runtime.capture.tape import GraphTape, Unsupported
from fullgraph.runtime.monitor import annotation_table, autograd_calls
from fullgraph.runtime.monitor.calls import CallHandling
from fullgraph.runtime.monitor.iteration import (
    SNAPSHOT_ITERABLES,
    IterationTracking,
    IteratorState,
)
from fullgraph.runtime.monitor.state import FrameState, Mutation
from fullgraph.runtime.monitor.user_code import (
    has_user_forward,
    is_setting,
    user_property,
)
from fullgraph.runtime.record.codegen import is_literal
from fullgraph.runtime.record.guards import IDENTITY_CHECKED
from fullgraph.runtime.sources import (
    ArgSource,
    AttrSource,
    ConstSource,
    ContainsSource,
    GlobalHooksSource,
    HasAttrSource,
    HooksSource,
    ItemSource,
    IterItemsSource,
    KeysSource,
    KwargSource,
    LenSource,
    LookupSource,
    RootFunctionSource,
    RootModuleSource,
    Source,
    TypeOfSource,
    base_of,
    global_module_hooks,
    is_key_representable,
    module_hooks,
)
from fullgraph.runtime.symbolic.scalars import Condition, Leaf, Sym, is_symbolic_number
from fullgraph.runtime.symbolic.shapes import ShapeTracker
from fullgraph.runtime.symbolic.sizes import SizeInt, holds_size, plain
from fullgraph.runtime.torch_internals import getset_descriptor_name, tree_flatten

_SHARED_TYPES = (bool, int, str, type(None), float, bytes)


def _shared(value: Any) -> bool:
    """Values two paths may both reach without being one object the program shares:
    numbers, strings, and immutable literals such as ``()``, which Python interns."""
    if isinstance(value, _SHARED_TYPES):
        return True
    return type(value) in (tuple, frozenset) and is_literal(value)


class MonitorRun(CallHandling, IterationTracking):
    """Runs a function once under observation and collects what a record needs."""

    def __init__(
        self,
        fn: Callable,
        args: tuple,
        kwargs: dict,
        module: torch.nn.Module | None,
        varying: set[Source] | frozenset = frozenset(),
        injected: dict | None = None,
        dynamic: dict | None = None,
        follow_sizes: bool | None = None,
    ):
        self.fn = fn
        self.size_reads = 0  # tensor sizes Python saw (shape, size(), len ...)
        # Results of callouts a missed replay already made (by callout index).
        self.injected: dict[int, Any] = dict(injected or {})
        target = fn.__func__ if isinstance(fn, types.MethodType) else fn
        self.root_code = getattr(target, "__code__", None)
        self.args, self.kwargs = args, kwargs
        # Scalars seen to change between calls: symbolic instead of guarded by value.
        self.varying = varying
        self.symbolic_sources: set[Source] = set()
        # Symbolic sources whose value the monitor followed from the load on (a Leaf):
        # one the program reached some other way was used as the number it was.
        self.symbolic_taken: set[Source] = set()
        self.entry_conditions: list[Condition] = []
        self.pending_lifts: dict[int, Sym] = {}
        self.container_syms: dict[int, dict] = {}
        self.store_syms: dict[tuple, tuple] = {}
        self.result_sym: tuple | None = None
        self._last_read: tuple | None = None
        self.module = module
        self.sources: dict[int, Source] = {}
        self.keepalive: list[Any] = []
        self.reads: dict[Source, Any] = {}
        self.source_values: dict[Source, Any] = {}  # what each registered source reached
        self.changed_state: dict[type, str] = {}  # kinds of objects a replayed call changed
        self.aliases: list[tuple[Source, Source]] = []
        # Library objects the run made (warnings.catch_warnings()): calls on them can't
        # be replayed, since a replay would call them on this run's object.
        # id -> (class, args, kwargs, callouts recorded before it was made)
        self.made_objects: dict[int, tuple] = {}
        self.written: set[tuple[int, Any]] = set()
        self.written_cells: set[int] = set()
        self.written_containers: set[int] = set()
        # Why this run's state can't become a record (a container read after a call
        # changed it wholesale, a read through state a replayed call changed): the
        # next call is monitored again.
        self.not_recordable: list[str] = []
        self.mutations: list[Mutation] = []
        self.globals_consts: dict[int, tuple[str, dict]] = {}
        self.iterators: dict[int, IteratorState] = {}
        self.frames: list[FrameState] = []
        self.paused = False
        self.callout_pending = False
        self.unsupported: list[breaks.GraphBreak] = []
        self.breaks: list[breaks.GraphBreak] = []
        self.tape = GraphTape(self.resolve_external, self.locate, self.lift)
        # Input sizes seen to change between calls: followed as symbols (runtime/symbolic/shapes.py).
        if follow_sizes is None:
            follow_sizes = bool(dynamic)
        self.shapes = ShapeTracker(self, dynamic or {}) if follow_sizes else None
        self.tape.shapes = self.shapes
        self.mode = CaptureMode(self.on_torch_call)
        self._module_index: dict[int, Source] | None = None
        self.guarded_layers: set[type] = set()  # torch layers whose globals are guarded
        # Hooks for every module run inside any module call the program makes.
        self.read(GlobalHooksSource(), global_module_hooks(), symbolic=False)
        if module is not None:
            self.register(module, RootModuleSource())
            # ``net.forward = ...`` or ``Net.forward = ...`` after compiling: another forward.
            self.read_class_attribute(module, RootModuleSource(), "forward")
            self.register_module_tree(module, RootModuleSource())
            self.read(HooksSource(RootModuleSource()), module_hooks(module), symbolic=False)
            if not has_user_forward(module):  # e.g. an nn.Sequential root
                self.guard_library_module(module, RootModuleSource())
        self._register_callable(fn, RootFunctionSource())
        if callable_object(fn):  # ``Affine.__call__ = ...``: special methods come from the class
            call = type(fn).__call__
            self.read(AttrSource(TypeOfSource(RootFunctionSource()), "__call__"), call)
        self.register_defaults(fn)
        for i, value in enumerate(args):
            self.register_root(value, ArgSource(i))
        for name, value in kwargs.items():
            self.register_root(value, KwargSource(name))

    # -- sources and reads -------------------------------------------------
    def register(self, value: Any, source: Source) -> None:
        if not isinstance(value, _SHARED_TYPES) and id(value) not in self.sources:
            self.sources[id(value)] = source
            self.source_values[source] = value
            self.keepalive.append(value)

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

    def register_defaults(self, fn: Any) -> None:
        """A function's default values are objects from outside the call (``acc=[]``
        keeps what earlier calls appended): give them sources through the function."""
        source = self.source_of(fn)
        target = fn.__func__ if isinstance(fn, types.MethodType) else fn
        if source is None or not isinstance(target, types.FunctionType):
            return
        # Read, not only registered: a default replaced (``f.__defaults__ = (3,)``,
        # ``f.__kwdefaults__["power"] = 3``) is a new value for the call that uses it.
        # (A function without defaults is not read: giving it some later does not
        # change a call that passed every argument.)
        if target.__defaults__:
            defaults = AttrSource(source, "__defaults__")
            self.read(LenSource(defaults), len(target.__defaults__), symbolic=False)
            for i, value in enumerate(target.__defaults__):
                self.read(ItemSource(defaults, i), value, symbolic=False)
        if target.__kwdefaults__:
            kwdefaults = AttrSource(source, "__kwdefaults__")
            for name, value in target.__kwdefaults__.items():
                self.read(ItemSource(kwdefaults, name), value, symbolic=False)

    def _register_callable(self, fn: Any, source: Source) -> None:
        """The compiled callable and what it carries: a partial's arguments, a method's self."""
        self.register(fn, source)
        if isinstance(fn, functools.partial):
            self._register_callable(fn.func, AttrSource(source, "func"))
            for i, value in enumerate(fn.args):
                self.register_root(value, ItemSource(AttrSource(source, "args"), i))
            for name, value in fn.keywords.items():
                self.register_root(value, ItemSource(AttrSource(source, "keywords"), name))
        elif isinstance(fn, types.MethodType):
            self.register_root(fn.__self__, AttrSource(source, "__self__"))
        wrapped = getattr(fn, "__wrapped__", None)
        if wrapped is not None and not isinstance(fn, functools.partial):
            # functools.wraps decorators (torch.inference_mode(), user decorators):
            # the closure cells of the inner function are read through it.
            self._register_callable(wrapped, AttrSource(source, "__wrapped__"))

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
        self._last_read = (source, value)
        changed_by = self.changed_state and self._reads_changed_state(source)
        if changed_by:
            # The value now comes from state the call changed (lr after
            # scheduler.step(), .training after model.train()): a guard at entry can't
            # vouch for it, and a replay that found it changed could not undo the call.
            self.not_recordable.append(
                f"{source.expr()} read after {changed_by} changed training state"
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
        if isinstance(value, types.MethodType):
            # The guard checks the method's function; which object it is bound to is
            # read too (``op = a.apply`` rebound to ``b.apply`` of another instance).
            self.read(AttrSource(source, "__self__"), value.__self__, symbolic=False)

    def note_state_change(self, kinds: tuple, call_name: str) -> None:
        """A replayed call changed the plain state of objects of these kinds."""
        for kind in kinds:
            self.changed_state.setdefault(kind, call_name)

    def _reads_changed_state(self, source: Source) -> str | None:
        """The call that changed state ``source`` goes through (an optimizer's
        param_groups after a scheduler step, a module's flags after ``train()``)."""
        path: Source | None = base_of(source)  # reaching the object itself reads nothing
        while path is not None:
            value = self.source_values.get(path)
            for kind, call_name in self.changed_state.items():
                if isinstance(value, kind):
                    return call_name
            path = base_of(path)
        return None

    def loaded_written(self, key: tuple, value: Any) -> None:
        """A load of something the program stored earlier in this run."""
        stored = self.store_syms.get(key)
        self._last_read = ("stored", stored[1], stored[0]) if stored is not None else None

    def read_attr(self, owner: Any, name: str, value: Any) -> None:
        if (id(owner), name) in self.written:
            self.loaded_written((id(owner), name), value)
            return
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
            elif user_tensor_attribute(owner, name):  # ``x.scale`` set by the caller
                source = self.source_of(owner) or self.resolve_external(owner)
                if source is not None:
                    self.read(AttrSource(source, name), value)
            return
        source = self.source_of(owner)
        if source is None or isinstance(owner, types.ModuleType) and name.startswith("__"):
            return
        if isinstance(value, types.MethodType) and value.__self__ is owner:
            self.read_class_attribute(owner, source, name)
            return  # a method: its function is checked on the owner's class
        if user_property(type(owner), name):
            self.read_class_attribute(owner, source, name)
            return  # its getter is user code: what it reads is guarded as it runs
        self.read(AttrSource(source, name), value)

    def read_class_attribute(self, owner: Any, source: Source, name: str) -> None:
        """``owner.name`` found a method or property on the class: guard that the class
        still holds the same one, and that no instance attribute shadows it since."""
        if isinstance(owner, (type, types.ModuleType)):
            return  # a class's or module's own attribute: read as a value elsewhere
        if not isinstance(getattr(owner, "__dict__", None), dict):
            return  # no instance dict to shadow it (slots, C types)
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
        if not is_key_representable(key) or isinstance(key, bool):
            self.read_whole(container)  # slices and other keys: guard the whole container
            return
        if (id(container), key) in self.written:
            self.loaded_written((id(container), key), value)
            return
        self.read(ItemSource(source, key), value)

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
        if source is not None:
            self.read(HasAttrSource(source, name), False)

    def read_membership(self, container: Any, item: Any, result: Any) -> None:
        source = self.source_of(container)
        if source is None or isinstance(container, torch.Tensor):
            return
        if self.written_external(container):
            return
        if is_key_representable(item):
            self.read(ContainsSource(source, item), result)
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
        if isinstance(container, (list, tuple)):
            self.read(LenSource(source), len(container), symbolic=False)
            for i, item in enumerate(container):
                self.read(ItemSource(source, i), item, symbolic=False)
        elif isinstance(container, dict):
            keys = tuple(container.keys())
            if all(is_key_representable(k) for k in keys):
                self.read(KeysSource(source), keys, symbolic=False)
                for key in keys:
                    self.read(ItemSource(source, key), container[key], symbolic=False)
        elif isinstance(container, SNAPSHOT_ITERABLES) and not isinstance(container, (str, bytes)):
            # sum(a_set), sorted(a_deque)...  (strings are guarded by value already)
            items = tuple(container)
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
        for name, child in module._modules.items():
            if child is not None and id(child) not in self.sources:
                child_source = AttrSource(source, name)
                self.register(child, child_source)
                self.register_module_tree(child, child_source)

    def guard_library_module(self, module: torch.nn.Module, source: Source) -> None:
        """A torch layer runs unobserved: guard the plain settings its forward reads.

        ``training``, ``negative_slope``, ``p``, ``momentum``, ``dim``... and the
        same for the layers it calls in turn (an ``nn.Sequential``'s children).
        """
        self.guard_library_globals(type(module))
        # Setting by setting, not one dict-version check: a model switched to eval()
        # and back to train() must hit its train-mode record again.
        self.read(AttrSource(source, "training"), module.training, symbolic=False)
        self.read(HooksSource(source), module_hooks(module), symbolic=False)
        for name, value in vars(module).items():
            if not name.startswith("_") and name != "training" and is_setting(value):
                self.read(AttrSource(source, name), value, symbolic=False)
        for name, child in module._modules.items():
            if child is None:
                continue
            child_source = AttrSource(source, name)
            self.register(child, child_source)
            if has_user_forward(child):
                self.register_module_tree(child, child_source)
            else:
                self.guard_library_module(child, child_source)

    def guard_library_globals(self, layer: type) -> None:
        """The module-level functions a torch layer's forward calls (``F.gelu`` in
        ``nn.GELU``): guarded by identity, so one patched between calls is seen."""
        forward = getattr(layer, "forward", None)
        if not isinstance(forward, types.FunctionType) or layer in self.guarded_layers:
            return
        self.guarded_layers.add(layer)
        module_globals = forward.__globals__
        for owner_name, attribute in global_attribute_loads(forward.__code__):
            owner = module_globals.get(owner_name)
            if not isinstance(owner, types.ModuleType) or not hasattr(owner, attribute):
                continue
            owner_source = ItemSource(ConstSource(self.globals_name(module_globals)), owner_name)
            self.read(owner_source, owner, symbolic=False)
            value = getattr(owner, attribute)
            self.read(AttrSource(owner_source, attribute), value, symbolic=False)

    # -- symbolic scalars ----------------------------------------------------
    def symbolic_candidate(self, value: Any) -> bool:
        """A callout result the monitor follows instead of guarding its value right away."""
        if is_symbolic_number(value) or isinstance(value, str):
            return True
        # An ndarray or list from .numpy()/.tolist(): followed by identity.  A function,
        # class or module (an attention function looked up in a registry) is checked by
        # identity right after the call instead.
        return (
            value is not None
            and not isinstance(value, (bool, torch.Tensor))
            and not isinstance(value, tuple)
            and not isinstance(value, IDENTITY_CHECKED)
        )

    def take_symbolic_read(self, value: Any) -> Leaf | None:
        """A Leaf for the value a load just pushed, when it was read symbolically."""
        last, self._last_read = self._last_read, None
        if last is None:
            return None
        if last[0] == "stored":  # reloading a symbolic value the program stored
            return last[1] if last[2] is value else None
        if last[1] is value and last[0] in self.symbolic_sources:
            self.symbolic_taken.add(last[0])
            return Leaf(value, source=last[0])
        return None

    def root_local_syms(self, code: types.CodeType) -> dict[int, Sym]:
        """Symbolic numeric arguments, by fast-local index of the root frame."""
        offset = 1 if self.module is not None else 0
        syms: dict[int, Sym] = {}
        names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        # An argument a nested function closes over (``lambda v: v + n``) lives in a
        # cell, where no symbol follows it: guarded by value instead.
        for i, name in enumerate(names):
            if name in code.co_cellvars:
                position = i - offset
                if 0 <= position < len(self.args):
                    self.symbolic_sources.discard(ArgSource(position))
                self.symbolic_sources.discard(KwargSource(name))
        for i, value in enumerate(self.args):
            source = ArgSource(i)
            if source in self.symbolic_sources and i + offset < code.co_argcount:
                self.symbolic_taken.add(source)
                syms[i + offset] = Leaf(value, source=source)
        for name, value in self.kwargs.items():
            source = KwargSource(name)
            if source in self.symbolic_sources and name in names:
                self.symbolic_taken.add(source)
                syms[names.index(name)] = Leaf(value, source=source)
        return syms

    def concretize(self, sym: Sym) -> None:
        """The exact value of ``sym`` matters: guard on it."""
        if isinstance(sym, Leaf) and sym.source is not None:
            self.symbolic_sources.discard(sym.source)  # back to a guard on its value
            return
        if not is_literal(sym.value):
            self.refuse(
                f"a {type(sym.value).__name__} computed from tensor data is used "
                "in a way the monitor cannot replay"
            )
            return
        self._add_condition(Condition(sym, "equal", sym.value))

    def branch_on(self, sym: Sym, outcome: bool) -> None:
        self._add_condition(Condition(sym, "truth", outcome))

    def _add_condition(self, condition: Condition) -> None:
        depth = condition.sym.callout_depth()
        target = self.entry_conditions if depth < 0 else self.tape.callouts[depth].conditions
        text = condition.source(repr)
        if all(existing.source(repr) != text for existing in target):
            target.append(condition)

    def store_symbolic(self, key: tuple, owner: Any, value: Any, sym: Sym) -> None:
        """A symbolic value stored into ``owner``: the mock writes the expression."""
        if self.source_of(owner) is None and not isinstance(owner, dict):
            self.concretize(sym)
            return
        self.store_syms[key] = (value, sym)
        self.keepalive.append(value)

    def lift(self, value: Any) -> Sym | None:
        """Called by the capture for each non-tensor argument of a torch op."""
        return self.pending_lifts.pop(id(value), None) if self.pending_lifts else None

    # -- mutations ---------------------------------------------------------
    def store_attr(self, owner: Any, name: str, delete: bool = False, value: Any = None) -> None:
        self.written.add((id(owner), name))
        source = self.source_of(owner)
        if isinstance(owner, torch.Tensor):
            if name == "data" and isinstance(value, torch.Tensor):
                self._store_data(owner, value)
                return
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
            self._mutate(Mutation("delattr" if delete else "setattr", source, owner, name))

    def _store_data(self, owner: torch.Tensor, value: torch.Tensor) -> None:
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

    def store_item(self, container: Any, key: Any, delete: bool = False) -> None:
        if isinstance(container, torch.Tensor):
            return  # Tensor.__setitem__ is an in-place graph op
        source = self.source_of(container)
        if isinstance(key, slice):  # xs[1:] = ...: the list changes wholesale
            self.written_containers.add(id(container))
            if source is not None:
                self.refuse(f"slice assignment into {source.expr()}, which came from outside")
            return
        self.written.add((id(container), key))
        if source is None:
            return
        if not is_key_representable(key):
            self.refuse(f"store into {source.expr()} with a key of type {type(key).__name__}")
            return
        self._mutate(Mutation("delitem" if delete else "setitem", source, container, key))

    def store_inplace(self, container: Any, method: str, operand: Any) -> None:
        """An in-place operator on a container (``log += [v]``): replayed as the call."""
        self.written_containers.add(id(container))
        source = self.source_of(container)
        if source is None:
            return
        if not is_literal(operand) or id(operand) in self.container_syms:
            # Its items came from this run (a tensor, a value read from tensor data):
            # the mock could only write this run's values.
            self.refuse(f"in-place {method} on {source.expr()} with values the function computed")
            return
        self._mutate(Mutation("call", source, container, method, (operand,), {}))

    def store_global(self, globals_dict: dict, name: str) -> None:
        self.written.add((id(globals_dict), name))
        from fullgraph.runtime.sources import ConstSource

        self._mutate(
            Mutation("setglobal", ConstSource(self.globals_name(globals_dict)), globals_dict, name)
        )

    def mutate_cell(self, source: Source, cell: Any) -> None:
        self._mutate(Mutation("setcell", source, cell))

    def _mutate(self, mutation: Mutation) -> None:
        for existing in self.mutations:
            if (existing.kind, existing.owner is mutation.owner, existing.name) == (
                mutation.kind,
                True,
                mutation.name,
            ) and mutation.kind != "call":
                return
        self.keepalive.append(mutation.owner)
        self.mutations.append(mutation)

    # -- torch calls ---------------------------------------------------------
    def on_torch_call(self, func, args: tuple, kwargs: dict) -> Any:
        if self.paused:
            return func(*args, **kwargs)
        # The monitor's own Python (dataclass __init__s and the like) must not be
        # observed: new frames are left untraced while this handler runs.
        self.paused = True
        try:
            return self._torch_call(func, args, kwargs)
        finally:
            self.paused = False

    def _torch_call(self, func, args: tuple, kwargs: dict) -> Any:
        name = getattr(func, "__name__", "")
        if (
            name in DATA_DEPENDENT
            or (name == "__getitem__" and _has_mask_index(args))
            or _packed_sequence_call(name, args)
            or _size_from_tensor(name, args)
            or (func is torch.where and len(args) + len(kwargs) == 1)
        ):
            result = func(*args, **kwargs)
            self._torch_callout(func, args, kwargs, result, breaks.DATA_DEPENDENT_SHAPE)
            return result
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
            else:
                result = func(*args, **kwargs)
            self._torch_callout(
                func, args, kwargs, result, breaks.AUTOGRAD_STATE_CALL, effectful=effectful
            )
            return result
        if name in VALUE_READS and len(self.tape.callouts) in self.injected:
            result = self.injected.pop(len(self.tape.callouts))  # read in the replay that missed
            self._torch_callout(func, args, kwargs, result, breaks.TENSOR_VALUE_READ)
            return result
        for value in (*args, *kwargs.values()):
            # ``x.reshape(shape)``, ``F.pad(x, cfg["pad"])``, ``torch.tensor(WEIGHTS)``: torch
            # reads a list from outside item by item, unobserved; the graph bakes them in.
            if isinstance(value, (list, tuple, dict)) and id(value) in self.sources:
                self.read_nested(value)  # (a tuple of literals is guarded by value already)
        tensors = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
        versions = [_version(t) for t in tensors]
        try:
            if self.shapes is not None and self.shapes.live and holds_size((args, kwargs)):
                # The graph gets the sizes' expressions; the real call their numbers.
                real_args, real_kwargs = plain((args, kwargs))
                result = func(*real_args, **real_kwargs)
            else:
                result = func(*args, **kwargs)
        except Exception:
            # Whether a torch op raises can depend on exact sizes (a view that fails for
            # some shapes): a run whose program caught one does not serve other sizes.
            self.size_reads += 1
            raise
        if self.tape.unsupported is not None:
            return result
        mutated = [t for t, v in zip(tensors, versions) if _version(t) != v]
        try:
            prop = getset_descriptor_name(func)
            if name in _HIDDEN_STATE_CALLS or prop in _HIDDEN_STATE_CALLS:
                # Not a function of what the guard checks (memory addresses, autograd
                # flags, hooks): replayed each call, its result checked where it is read.
                self._torch_callout(
                    func,
                    args,
                    kwargs,
                    result,
                    breaks.AUTOGRAD_STATE_CALL,
                    effectful=name in _HIDDEN_STATE_EFFECTS,
                )
            elif _contains_tensor(result) or (result is None and mutated):
                self.tape.record_op(func, args, kwargs, result, mutated)
            elif name in VALUE_READS:
                self._torch_callout(func, args, kwargs, result, breaks.TENSOR_VALUE_READ)
            elif name in _SIZE_READS or getset_descriptor_name(func) in _SIZE_READS:
                symbolic = self._symbolic_size(getset_descriptor_name(func) or name, args, result)
                if symbolic is None:
                    self.size_reads += 1  # Python now depends on a size: no dynamic shapes
                else:
                    result = symbolic
        except Unsupported as error:
            self.tape.unsupported = error
            self.unsupported.append(
                self.locate(function_name=name, category=error.category, detail=error.detail)
            )
        except Exception as error:  # noqa: BLE001 - a fullgraph bug: the program goes on
            self.refuse(f"internal error in fullgraph's capture of {name}: {error!r}")
        return result

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
            return sizes[0]
        if name in ("numel", "nelement"):
            total = 1
            for size in sizes:
                total = total * size
            return total
        if not any(isinstance(size, SizeInt) for size in sizes):
            return result  # stride() and the like of a tensor whose sizes don't vary
        return None

    def _torch_callout(self, func, args, kwargs, result, category, effectful=False) -> None:
        try:
            self.tape.record_callout(
                func,
                "Tensor." + getattr(func, "__name__", "?")
                if _is_method(func)
                else annotation_table.qualified_name(func),
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

    # -- locations -----------------------------------------------------------
    def locate(
        self, function_name: str, category: breaks.BreakCategory, detail: str = ""
    ) -> breaks.GraphBreak:
        """The current user call site (innermost monitored frame) with its call stack."""
        stack = []
        for state in self.frames:
            ins = state.instruction
            line, column, end_line, end_column = _position(state.frame, ins)
            stack.append(
                breaks.StackFrame(
                    state.frame.f_code.co_filename, line, column, state.frame.f_code.co_name
                )
            )
        last = self.frames[-1] if self.frames else None
        if last is None:
            return breaks.GraphBreak(category, function_name, "<unknown>", 0, 0, 0, 0, [], detail)
        line, column, end_line, end_column = _position(last.frame, last.instruction)
        graph_break = breaks.GraphBreak(
            category,
            function_name,
            last.frame.f_code.co_filename,
            line,
            column,
            end_line,
            end_column,
            stack,
            detail,
        )
        self.breaks.append(graph_break)
        return graph_break

    def refuse(self, detail: str) -> None:
        """This run can't become a record: the construct at the current instruction is
        reported as unsupported and the call falls back (or is monitored again)."""
        if self.tape.unsupported is None:
            self.tape.unsupported = Unsupported(breaks.UNSUPPORTED_CONSTRUCT, detail)
        self.unsupported.append(self.locate("<store>", breaks.UNSUPPORTED_CONSTRUCT, detail))


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
    ]
)
# Tensor queries whose result depends on a size (the graph can't be size-generic then).
_SIZE_READS = frozenset(
    ["shape", "size", "__len__", "numel", "nelement", "stride", "storage_offset"]
)
_SIZE_DEPENDENT_OPS = frozenset(["split", "unbind", "tensor_split", "__iter__", "split_with_sizes"])
# Tensor attributes whose assignment changes the tensor for later calls (``p.data = ...``).
_TENSOR_STATE = ("data", "grad", "requires_grad")


@functools.cache
def global_attribute_loads(code: types.CodeType) -> tuple[tuple[str, str], ...]:
    """``(module name, attribute)`` for each ``F.gelu``-style load in ``code``."""
    loads = []
    previous = None
    for ins in dis.get_instructions(code):
        if (
            ins.opname in ("LOAD_ATTR", "LOAD_METHOD")
            and previous is not None
            and previous.opname == "LOAD_GLOBAL"
        ):
            loads.append((previous.argval, ins.argval))
        previous = ins
    return tuple(dict.fromkeys(loads))


def callable_object(fn: Any) -> bool:
    """An instance of a class with ``__call__`` (not a function, method, partial or module)."""
    return not isinstance(
        fn,
        (types.FunctionType, types.MethodType, functools.partial, torch.nn.Module, type),
    ) and isinstance(getattr(type(fn), "__call__", None), types.FunctionType)  # noqa: B004


def user_tensor_attribute(tensor: torch.Tensor, name: str) -> bool:
    """An attribute someone set on this tensor object (``x.scale = 3.0``), not torch's."""
    try:
        return name in tensor.__dict__
    except AttributeError:
        return False


def _position(frame, ins) -> tuple[int, int, int, int]:
    """1-based line and 0-based code-point columns of an instruction."""
    positions = getattr(ins, "positions", None) if ins is not None else None
    if positions is None or positions.lineno is None:
        line = frame.f_lineno or frame.f_code.co_firstlineno
        return line, 0, line, 0
    text = linecache.getline(frame.f_code.co_filename, positions.lineno)
    end_text = linecache.getline(frame.f_code.co_filename, positions.end_lineno or positions.lineno)

    def to_codepoints(line_text: str, byte_offset: int | None) -> int:
        if byte_offset is None:
            return 0
        return len(line_text.encode("utf-8")[:byte_offset].decode("utf-8", errors="ignore"))

    return (
        positions.lineno,
        to_codepoints(text, positions.col_offset),
        positions.end_lineno or positions.lineno,
        to_codepoints(end_text, positions.end_col_offset),
    )


def _version(tensor: torch.Tensor) -> int | None:
    """The tensor's version counter (bumped by in-place updates); None for inference
    tensors, which have none: an update of one is then only seen in the op's name."""
    if isinstance(tensor, torch.nn.parameter.UninitializedTensorMixin):
        return None  # a lazy module's parameter before its first forward: no data yet
    # Not through a tensor subclass's __torch_function__: this is the monitor's query.
    with torch._C.DisableTorchFunctionSubclass():
        if tensor.is_inference():
            return None
        return tensor._version


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


def _has_mask_index(args: tuple) -> bool:
    if len(args) < 2:
        return False
    index = args[1]
    items = index if isinstance(index, tuple) else (index,)
    return any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in items)
