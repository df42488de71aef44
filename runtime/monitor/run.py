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

import linecache
import types
from collections.abc import Callable
from typing import Any

import torch

from fullgraph.runtime import breaks
from fullgraph.runtime.capture.mode import CaptureMode
from fullgraph.runtime.capture.segments import Unsupported
from fullgraph.runtime.capture.tape import GraphTape
from fullgraph.runtime.capture.tensor_meta import TensorMeta
from fullgraph.runtime.capture.values import is_numpy_scalar
from fullgraph.runtime.monitor import (
    attribute_hooks,
    changed_arguments,
    context_vars,
    function_reads,
    layer_state,
    library_layers,
    passed_syms,
)
from fullgraph.runtime.monitor.attribute_hooks import ProgramHooks
from fullgraph.runtime.monitor.calls import CallHandling
from fullgraph.runtime.monitor.iteration import (
    IterationTracking,
    IteratorState,
)
from fullgraph.runtime.monitor.provenance import Provenance, callable_object
from fullgraph.runtime.monitor.side_effects import SideEffects
from fullgraph.runtime.monitor.state import FrameState, Mutation
from fullgraph.runtime.monitor.torch_calls import TorchCallRouting
from fullgraph.runtime.monitor.user_code import (
    has_user_forward,
)
from fullgraph.runtime.record.codegen import is_literal
from fullgraph.runtime.record.guards import IDENTITY_CHECKED
from fullgraph.runtime.sources import (
    ArgSource,
    AttrSource,
    GlobalHooksSource,
    HooksSource,
    KwargSource,
    RootFunctionSource,
    RootModuleSource,
    Source,
    TypeOfSource,
    global_module_hooks,
    module_hooks,
)
from fullgraph.runtime.symbolic.scalars import Condition, Leaf, Sym, is_symbolic_number
from fullgraph.runtime.symbolic.shapes import ShapeTracker
from fullgraph.runtime.torch_internals import foreign_mode


class MonitorRun(Provenance, SideEffects, TorchCallRouting, CallHandling, IterationTracking):
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
        sized_by_data_in_graph: bool = True,
        hooks: ProgramHooks | None = None,
    ):
        self.fn = fn
        # The program's attribute hooks, set aside while fullgraph's own code runs.
        self.hooks = hooks if hooks is not None else ProgramHooks()
        self.effects_made = 0  # stores recorded so far (merged ones too)
        # Containers the function made, handed to replayed calls that left them alone:
        # (container, its state then, the call's name) (monitor/changed_arguments.py).
        self.handed_containers: list[tuple] = []
        self.returned_containers: list[tuple] = []  # containers replayed calls returned
        # Whether nonzero, x[mask] and the like go into the graph (False once a run found
        # Python reading such a size: capture/data_dependent.py).
        self.sized_by_data_in_graph = sized_by_data_in_graph
        self.keeps_sized_by_data_out = False  # set for the runs after this one
        self.size_reads = 0  # tensor sizes Python saw (shape, size(), len ...)
        # Results of callouts a missed replay already made (by callout index).
        self.injected: dict[int, Any] = dict(injected or {})
        self.injected_at_start = bool(injected)
        # While a path of data-dependent branches runs (monitor/branch_exploration.py):
        # its ``bool(t)`` reads are branch points; and what came of the exploration.
        self.branching: Any = None
        self.merge_note: str | None = None
        self.merged_reads: list[breaks.GraphBreak] = []  # the real run's reads, now merged
        self.unmerged_tape: GraphTape | None = None  # the real run's own, once merged
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
        # Iterators over such containers: [container, next index] (container_items.py).
        self.item_iterators: dict[int, list] = {}
        # Containers holding such containers (``[[n]]``): the inner ones, by the outer's id.
        self.nested_containers: dict[int, list] = {}
        self.store_syms: dict[tuple, tuple] = {}
        self.result_sym: tuple | None = None
        self._last_read: tuple | None = None
        self.module = module
        self.sources: dict[int, Source] = {}
        self.keepalive: list[Any] = []
        self.reads: dict[Source, Any] = {}
        self.source_values: dict[Source, Any] = {}  # what each registered source reached
        # id -> a registered tensor's metadata when the run met it (the guard checks it).
        self.entry_meta: dict[int, TensorMeta] = {}
        self.entry_arrays: dict[int, Any] = {}  # id -> a copy of a numpy array read, as met
        self.changed_state: dict[type, str] = {}  # kinds of objects a replayed call changed
        self.aliases: list[tuple[Source, Source]] = []
        # Pairs of paths to two objects that must stay two (module_walks.py: a weight
        # tied to another one later would change what a deduplicating walk yields).
        self.distinct: list[tuple[Source, Source]] = []
        # Library objects the run made (warnings.catch_warnings()): calls on them can't
        # be replayed, since a replay would call them on this run's object.
        # id -> (class, args, kwargs, callouts recorded before it was made)
        self.made_objects: dict[int, tuple] = {}
        self.written: set[tuple[int, Any]] = set()
        # The same slot under its other name (``vars(o)["a"]`` / ``o.a``): -> the stored one.
        self.written_aliases: dict[tuple[int, Any], tuple[int, Any]] = {}
        # Modules the run reached, by the id of their ``__dict__`` (a function of theirs
        # storing a global stores the module's attribute: side_effects.mark_written).
        self.module_namespaces: dict[int, types.ModuleType] = {}
        self.deleted_slots: set[tuple[int, Any]] = set()  # outside keys / attributes deleted
        self.written_cells: set[int] = set()
        # id -> (function, the function whose frame made it), for functions made now.
        self.made_functions: dict[int, tuple] = {}
        self.written_containers: set[int] = set()
        # Why this run's state can't become a record (a container read after a call
        # changed it wholesale, a read through state a replayed call changed): the
        # next call is monitored again.
        self.not_recordable: list[str] = []
        self.mutations: list[Mutation] = []
        # Named constants of the generated code: module globals dicts, dict keys.
        self.globals_consts: dict[int, tuple[str, Any]] = {}
        # isinstance / issubclass answers a metaclass decides (monitor/type_checks.py).
        self.type_checks: dict[tuple, Any] = {}
        self.iterators: dict[int, IteratorState] = {}
        # How many times each context variable was set, less its resets (context_vars.py).
        self.context_vars_set: dict[int, int] = {}
        self.frames: list[FrameState] = []
        self.paused = False
        self.stopped = (
            False  # refused where observing further would show (monitor/context_entry.py)
        )
        self.callout_pending = False
        # While a custom Function's backward runs early (monitor/speculation.py): the
        # ctx it may write to, and the first effect it tried to make (None: none).
        self.speculating: Any = None
        self.speculation_problem: str | None = None
        # While that backward runs: what it reads from outside (eager reads it later).
        self.late_reads: list[tuple[Source, Any]] | None = None
        self.unsupported: list[breaks.GraphBreak] = []
        self.breaks: list[breaks.GraphBreak] = []
        self.tape = GraphTape(self.resolve_external, self.locate, self.lift)
        self.main_tape = self.tape  # self.tape is a branch's own while one is captured
        # Input sizes seen to change between calls: followed as symbols (runtime/symbolic/shapes.py).
        if follow_sizes is None:
            follow_sizes = bool(dynamic)
        self.shapes = ShapeTracker(self, dynamic or {}) if follow_sizes else None
        self.tape.shapes = self.shapes
        devices = self.tape.entry_devices
        self.mode = CaptureMode(self.on_torch_call, torch.device(devices[-1]) if devices else None)
        if devices is None:  # CompiledFunction runs such calls eagerly; explain() gets here
            self.not_recordable.append(f"called under {foreign_mode()}")
        self._module_index: dict[int, Source] | None = None
        self.guarded_layers: set[type] = set()  # torch layers whose globals are guarded
        # id of a torch layer's parameter or buffer -> the slot the run first met it in
        self.layer_slots: dict[int, Source] = {}
        # Hooks for every module run inside any module call the program makes.
        self.read(GlobalHooksSource(), global_module_hooks(), symbolic=False)
        self.root_watch: Callable[[], None] | None = None
        if module is not None:
            self.register(module, RootModuleSource())
            # ``net.forward = ...`` or ``Net.forward = ...`` after compiling: another forward.
            self.read_class_attribute(module, RootModuleSource(), "forward")
            self.register_module_tree(module, RootModuleSource())
            self.read(HooksSource(RootModuleSource()), module_hooks(module), symbolic=False)
            if not has_user_forward(module):  # e.g. an nn.Sequential root
                library_layers.guard_library_module(self, module, RootModuleSource())
            # Stores torch code makes while the root runs (the old spectral_norm's hook
            # setting ``module.weight``), as for a module the program calls.
            self.root_watch = layer_state.watch(
                self, module, whole_tree=not has_user_forward(module)
            )
        self.register_callable(fn, RootFunctionSource())
        if callable_object(fn):  # ``Affine.__call__ = ...``: special methods come from the class
            call = type(fn).__call__
            self.read(AttrSource(TypeOfSource(RootFunctionSource()), "__call__"), call)
        function_reads.read_function(self, fn)  # ``f.__code__ = ...``: another function
        for i, value in enumerate(args):
            self.register_root(value, ArgSource(i))
        for name, value in kwargs.items():
            self.register_root(value, KwargSource(name))

    def objects_made(self) -> list:
        """The objects of user and library classes the call made."""
        return [obj for obj in self.keepalive if id(obj) in self.made_objects]

    def release(self) -> None:
        """Let go of the program's objects once the run is over (its record is built).

        The run sits in reference cycles (its tape and capture mode hold its bound
        methods), so what it keeps (objects the call made, its frames and their
        locals, every tensor it met) would outlive the call until the cyclic
        collector ran: a weak reference or a ``WeakValueDictionary`` would still
        see an object eager freed on return.  Nothing reads the run afterwards.
        """
        for tape in {id(self.tape): self.tape, id(self.main_tape): self.main_tape}.values():
            tape.__dict__.clear()
        self.mode.handler = None
        self.__dict__.clear()

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
        names = passed_syms.parameters(code)
        if passed_syms.hooks_see_arguments(self):
            return syms
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
        value = sym.value
        if is_numpy_scalar(value):  # ``np.sqrt(s)``: its number, compared exactly
            value = value.item()
        if not is_literal(value):
            self.refuse(
                f"a {type(sym.value).__name__} that a replayed call returned (or that was "
                "computed from one) is used in a way the monitor cannot replay"
            )
            return
        self.add_condition(Condition(sym, "equal", value))

    def branch_on(self, sym: Sym, outcome: bool) -> None:
        self.add_condition(Condition(sym, "truth", outcome))

    def add_condition(self, condition: Condition) -> None:
        """A condition the record holds under: at entry, or after the callout it reads."""
        depth = condition.sym.callout_depth()
        target = self.entry_conditions if depth < 0 else self.tape.callouts[depth].conditions
        text = condition.source(repr)
        if all(existing.source(repr) != text for existing in target):
            target.append(condition)

    def store_symbolic(self, key: tuple, owner: Any, value: Any, sym: Sym) -> None:
        """A symbolic value stored into ``owner``: the mock writes the expression."""
        if type(owner) is list and type(key[1]) is int and -len(owner) <= key[1] < 0:
            key = (key[0], key[1] % len(owner))  # ``window[-1]``: its slot from the front
        if self.source_of(owner) is None and not isinstance(owner, dict):
            items = self.container_syms.get(id(owner))
            if items and type(key[1]) is int and -len(owner) <= key[1] < len(owner):
                # ``vals[0] = loss`` into a list the call built with symbols: the slot's
                # symbol is the stored one now (pinned: an iterator made before the
                # store, a C call, may read the slot where no symbol follows).
                items[key[1] % len(owner)] = sym
            self.concretize(sym)
            return
        self.store_syms[key] = (value, sym)
        self.keepalive.append(value)
        if self.source_of(owner) is None:
            # ``D = {}; D["s"] = k``: a dict the call made now holds a symbolic item, as
            # one built as ``{"s": k}`` does; a later read of it (``D["s"]``,
            # ``D.get``, ``**D``) takes the number, guarded by value.
            self.container_syms.setdefault(id(owner), {})[key[1]] = sym
            self.keepalive.append(owner)

    def stored_plain(self, container: Any, key: Any) -> None:
        """``container[key] = 5``: what a symbolic store or a literal put in that slot
        before is gone (the mock must not rebuild the slot from its symbol)."""
        items = self.container_syms.get(id(container))
        if not isinstance(key, slice):
            try:
                self.store_syms.pop((id(container), key), None)
                if items:
                    if isinstance(container, list) and isinstance(key, int) and key < 0:
                        key += len(container)
                    items.pop(key, None)
                return
            except TypeError:  # an unhashable key: as a slice
                pass
        # ``L[0:1] = ...``: every slot may have moved, the symbols' values are pinned
        for sym in (items or {}).values():
            if sym is not None:
                self.concretize(sym)
        if items:
            items.clear()

    def lift(self, value: Any) -> Sym | None:
        """Called by the capture for each non-tensor argument of a torch op."""
        return self.pending_lifts.pop(id(value), None) if self.pending_lifts else None

    def guard_untaken_lifts(self, keys: Any) -> None:
        """After the op they were handed to: the pending lifts the graph never took are
        guarded by value (the number was used where no graph input follows it)."""
        for key in list(keys):
            sym = self.pending_lifts.pop(key, None)
            if sym is not None:
                self.concretize(sym)

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

    def finish(self) -> None:
        """What can only be judged once the program returned: a container handed to a
        replayed call and changed afterwards, a read through an attribute hook that
        changed the program's state."""
        if self.root_watch is not None:
            self.root_watch()
        changed_arguments.refuse_changed_after(self)
        attribute_hooks.refuse_reads_through(self, self.hooks)
        context_vars.refuse_left_set(self)

    def refuse(self, detail: str) -> None:
        """This run can't become a record: the construct at the current instruction is
        reported as unsupported and the call falls back (or is monitored again)."""
        if self.tape.unsupported is None:
            self.tape.unsupported = Unsupported(breaks.UNSUPPORTED_CONSTRUCT, detail)
        self.unsupported.append(self.locate("<store>", breaks.UNSUPPORTED_CONSTRUCT, detail))


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
