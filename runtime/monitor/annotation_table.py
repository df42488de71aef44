"""Operation annotations: what the monitor may assume about code it can't see into.

MagPy's properties, as data.  Adding an annotation is one line in a table:

- ``pure`` (PureClosure): False for calls with effects outside the program's
  objects (printing, logging, the clock, random state, I/O).  Such a call is a
  *dynamic function*: the graph is split around it and it is replayed eagerly.
- ``mutates`` (InPlace): positions of arguments the call modifies (0 is the
  receiver of a method); an external object mutated this way gets the call
  replayed by the mock.
- ``iterates`` (Relation): the call returns an iterator over its argument
  (``enumerate``, ``zip``, ``dict.items`` ...), so the items it yields keep a
  source path into the external container.

ValueRead on tensors is decided where torch calls are seen (``capture``),
because every such read goes through ``Tensor`` methods.
"""

from __future__ import annotations

import builtins
import collections
import dataclasses
import functools
import re
import types

from fullgraph.runtime import breaks
from fullgraph.runtime.monitor.hidden_state_reads import (
    HIDDEN_STATE_READS,
    REFUSED_CALLS,
    SETTING_CHANGES,
    SETTING_READS,
    is_single_dispatch,
)


@dataclasses.dataclass(frozen=True)
class Annotation:
    pure: bool = True
    mutates: tuple[int, ...] = ()
    iterates: str | None = None
    category: breaks.BreakCategory | None = None
    # Why no record can hold a call to it: it changes what later torch operations
    # compute in ways the graph can't carry (the default dtype of a factory).
    refuses: str | None = None


PURE = Annotation()
EFFECT = Annotation(pure=False, category=breaks.PYTHON_SIDE_EFFECT)
READS_HIDDEN_STATE = Annotation(pure=False, category=breaks.UNKNOWN_NATIVE_CALL)
UNKNOWN_NATIVE = Annotation(pure=False, category=breaks.UNKNOWN_NATIVE_CALL)


def _mutating(*positions: int) -> Annotation:
    return Annotation(mutates=positions)


def _iterating(kind: str) -> Annotation:
    return Annotation(iterates=kind)


# Builtin functions, by name in the builtins module.
BUILTIN_FUNCTIONS: dict[str, Annotation] = {
    **{
        name: PURE
        for name in [
            "abs",
            "all",
            "any",
            "ascii",
            "bin",
            "bool",
            "callable",
            "chr",
            "complex",
            "dict",
            "divmod",
            "float",
            "format",
            "frozenset",
            "getattr",
            "hasattr",
            "hash",
            "hex",
            "id",
            "int",
            "isinstance",
            "issubclass",
            "len",
            "list",
            "max",
            "min",
            "oct",
            "ord",
            "pow",
            "range",
            "repr",
            "round",
            "set",
            "slice",
            "sorted",
            "str",
            "sum",
            "tuple",
            "type",
            "vars",
            "object",
            "super",
            "property",
            "staticmethod",
            "classmethod",
            "map",
            "filter",
        ]
    },
    "enumerate": _iterating("enumerate"),
    "zip": _iterating("zip"),
    "reversed": _iterating("reversed"),
    "iter": _iterating("iter"),
    "next": PURE,
    "dir": READS_HIDDEN_STATE,  # the object's attributes now: replayed, its result checked
    "__import__": Annotation(pure=False, refuses=REFUSED_CALLS["builtins.__import__"]),
    "setattr": _mutating(0),
    "delattr": _mutating(0),
    "print": EFFECT,
    "input": EFFECT,
    "open": EFFECT,
    "breakpoint": EFFECT,
    "exec": EFFECT,
    "eval": EFFECT,
}

# Methods of builtin containers, by (type, method name).
CONTAINER_METHODS: dict[tuple[type, str], Annotation] = {
    **{
        (list, m): _mutating(0)
        for m in [
            "append",
            "extend",
            "insert",
            "pop",
            "remove",
            "clear",
            "sort",
            "reverse",
            "__setitem__",
            "__delitem__",
            "__iadd__",
        ]
    },
    **{
        (list, m): PURE
        for m in ["index", "count", "copy", "__getitem__", "__len__", "__contains__"]
    },
    **{
        (dict, m): _mutating(0)
        for m in ["update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"]
        + ["move_to_end"]  # an OrderedDict's
    },
    **{(dict, m): PURE for m in ["get", "copy", "__getitem__", "__contains__", "__len__"]},
    **{
        (collections.deque, m): _mutating(0)
        for m in [
            "append",
            "appendleft",
            "extend",
            "extendleft",
            "pop",
            "popleft",
            "rotate",
            "clear",
            "remove",
            "insert",
            "reverse",
        ]
    },
    **{(collections.deque, m): PURE for m in ["index", "count", "copy", "__getitem__"]},
    (dict, "items"): _iterating("items"),
    (dict, "values"): _iterating("values"),
    (dict, "keys"): _iterating("keys"),
    **{
        (set, m): _mutating(0)
        for m in [
            "add",
            "discard",
            "remove",
            "pop",
            "clear",
            "update",
            "difference_update",
            "intersection_update",
        ]
    },
    **{
        (set, m): PURE
        for m in [
            "union",
            "intersection",
            "difference",
            "issubset",
            "issuperset",
            "copy",
            "__contains__",
        ]
    },
    **{(tuple, m): PURE for m in ["index", "count"]},
    **{
        (str, m): PURE
        for m in [
            "format",
            "join",
            "split",
            "rsplit",
            "strip",
            "lstrip",
            "rstrip",
            "replace",
            "startswith",
            "endswith",
            "lower",
            "upper",
            "title",
            "capitalize",
            "find",
            "rfind",
            "index",
            "partition",
            "rpartition",
            "zfill",
            "center",
            "ljust",
            "rjust",
            "isdigit",
            "isalpha",
            "isidentifier",
            "splitlines",
            "encode",
            "casefold",
            "count",
        ]
    },
}

# Whole modules of the standard library, by the callee's ``__module__`` prefix.
MODULES: dict[str, Annotation] = {
    **{
        m: PURE
        for m in [
            "math",
            "cmath",
            "operator",
            "functools",
            "itertools",
            "collections",
            "copy",
            "dataclasses",
            "typing",
            "enum",
            "abc",
            "numbers",
            "string",
            "re",
            "fractions",
            "contextlib",
            "types",
            "inspect",
            "heapq",
            "bisect",
            "statistics",
            "keyword",
            "textwrap",
            "contextvars",
            "weakref",
        ]
    },
    **{
        m: EFFECT
        for m in [
            "time",
            "random",
            "logging",
            "warnings",
            "os",
            "sys",
            "io",
            "socket",
            "subprocess",
            "datetime",
            "uuid",
            "secrets",
            "pathlib",
            "shutil",
            "tempfile",
            "pickle",
            "json",
            "csv",
            "sqlite3",
            "urllib",
            "http",
            "threading",
            "multiprocessing",
            "asyncio",
            "signal",
            "traceback",
            "pdb",
            "gc",
            "builtins.print",
        ]
    },
    # torch's Python code is opaque to the monitor: its tensor operations are
    # captured by the torch-function mode, everything else is pure metadata.
    "torch": PURE,
    # numpy reading a tensor goes through Tensor.__array__ (a ValueRead the
    # capture sees); numpy on plain Python values is deterministic.
    "numpy": PURE,
    "numpy.random": EFFECT,
    # Decimal's methods round by the thread's decimal context: replayed, results checked.
    "decimal": READS_HIDDEN_STATE,
}

# Builtin containers whose bound methods may change them (``xs.append``).
MUTABLE_BUILTINS = (list, dict, set, bytearray, collections.deque)

# Methods of ``object`` itself, reached through ``super().__getattribute__(name)``
# and friends: attribute access, handled like getattr/setattr by the monitor.
OBJECT_METHODS: dict[str, Annotation] = {
    "__getattribute__": PURE,
    "__getattr__": PURE,
    "__setattr__": _mutating(0),
    "__delattr__": _mutating(0),
    "__init__": PURE,
    "__new__": PURE,
    "__init_subclass__": PURE,
    "__eq__": PURE,
    "__ne__": PURE,
    "__hash__": PURE,
    "__repr__": PURE,
    "__str__": PURE,
    "__format__": PURE,
    "__dir__": PURE,
    "__reduce_ex__": PURE,
    "__sizeof__": PURE,
}

# Context managers choosing the kernels of the ops inside them (a graph replays with
# the default ones): ``with sdpa_kernel([SDPBackend.MATH]):``.
_KERNEL_SWITCHES = (
    "nn.attention.sdpa_kernel",
    "backends.cuda.sdp_kernel",
    "backends.cudnn.flags",
    "backends.mkldnn.flags",
)
_GENERATOR_SETTERS = ("manual_seed", "seed", "set_state", "set_offset", "graphsafe_set_state")
_GENERATOR_READS = ("get_state", "initial_seed", "get_offset", "graphsafe_get_state")

# Specific functions that differ from their module's entry.
FUNCTIONS: dict[str, Annotation] = {
    # Reads of process-wide settings no guard checks (grad mode, the default dtype,
    # inference mode, determinism and autocast it does): replayed, their result
    # checked, so a record that branched on one sees the caller's setting.
    **{name: READS_HIDDEN_STATE for name in SETTING_READS},
    "torch.initial_seed": READS_HIDDEN_STATE,
    "torch.get_rng_state": READS_HIDDEN_STATE,
    "torch.random.initial_seed": READS_HIDDEN_STATE,
    "torch.random.get_rng_state": READS_HIDDEN_STATE,
    # An lru_cache's counters move with every call of it, replays included.
    "functools._lru_cache_wrapper.cache_info": READS_HIDDEN_STATE,
    # Results that depend on state outside the arguments (hidden_state_reads.py).
    **{name: READS_HIDDEN_STATE for name in HIDDEN_STATE_READS},
    **{name: EFFECT for name in SETTING_CHANGES},
    **{name: Annotation(pure=False, refuses=why) for name, why in REFUSED_CALLS.items()},
    # C functions of pure modules that change their first argument in place.
    **{
        f"{module}.{name}": _mutating(0)
        for module, names in [
            ("heapq", ["heappush", "heappop", "heapify", "heapreplace", "heappushpop"]),
            ("bisect", ["insort", "insort_left", "insort_right"]),
            ("collections", ["_count_elements"]),  # Counter.update's C helper
            ("operator", ["setitem", "delitem", "iadd", "iconcat", "ior", "iand", "isub"]),
            ("random", ["shuffle"]),
        ]
        for name in names
    },
    "torch.manual_seed": EFFECT,
    "torch.seed": EFFECT,
    "torch.random.manual_seed": EFFECT,
    "torch.random.seed": EFFECT,
    # An explicit torch.Generator: its state lives outside the graph (draws from it are
    # callouts too, torch_calls.py), so seeding it is replayed in order, reading it checked.
    **{f"torch._C.Generator.{name}": EFFECT for name in _GENERATOR_SETTERS},
    **{f"torch._C.Generator.{name}": READS_HIDDEN_STATE for name in _GENERATOR_READS},
    "torch.cuda.synchronize": EFFECT,
    # A tensor sharing a numpy array's memory: made again each call (no torch op sees it).
    "torch._VariableFunctionsClass.from_numpy": UNKNOWN_NATIVE,
    # Process-wide settings: replayed in order (the graphs don't depend on them).
    "torch.set_num_threads": EFFECT,
    "torch.set_num_interop_threads": EFFECT,
    "torch.set_printoptions": EFFECT,
    "torch._tensor_str.set_printoptions": EFFECT,  # where torch.set_printoptions lives
    "torch.set_flush_denormal": EFFECT,
    # Changes the kernels later ops run (torch.empty gives NaN): made between two graphs.
    "torch.use_deterministic_algorithms": UNKNOWN_NATIVE,
    # Settings the operations after them compute with: a graph captured under one
    # would compute a replay's operations with the caller's setting instead.
    **{
        name: Annotation(pure=False, refuses=why)
        for name, why in [
            ("torch.set_default_dtype", "changes the dtype later tensors are made with"),
            ("torch.utils.swap_tensors", "swaps two tensors' memory and metadata"),
            ("torch.set_default_tensor_type", "changes the dtype later tensors are made with"),
            ("torch.set_default_device", "changes the device later tensors are made on"),
            ("torch.set_float32_matmul_precision", "changes how later matmuls compute"),
            ("torch._tensor_str.printoptions", "sets print options a replay's prints would miss"),
            *((f"torch.{name}", "switches the kernels later ops run") for name in _KERNEL_SWITCHES),
            ("torch.sparse.check_sparse_tensor_invariants", "checks tensors later ops make"),
            ("contextlib.redirect_stdout", "redirects sys.stdout, which a replay's prints miss"),
            ("contextlib.redirect_stderr", "redirects sys.stderr, which a replay's prints miss"),
            # A replay draws a graph's random numbers in one go, without the restore.
            ("torch.set_rng_state", "restores the random state between random draws"),
            ("torch.random.set_rng_state", "restores the random state between random draws"),
            ("torch.random.fork_rng", "restores the random state between random draws"),
            ("torch.cuda.set_rng_state", "restores the random state between random draws"),
            ("torch.cuda.random.set_rng_state", "restores the random state between random draws"),
        ]
    },
    "copy.deepcopy": PURE,
    "functools.partial": PURE,
}


# torch's switches (``set_fastpath_enabled``, ``enable_flash_sdp``,
# ``Distribution.set_default_validate_args``, ``preferred_linalg_library``): torch is
# annotated pure as a whole, but these change what later calls do.
_SETTER = re.compile(r"(set|enable|disable|allow|preferred)_")


def module_of(fn: object) -> str:
    """The module a callable belongs to, with C accelerator modules mapped to
    their public name (``_warnings`` -> ``warnings``, ``posix`` -> ``os``)."""
    module = getattr(fn, "__module__", None)
    owner = getattr(fn, "__self__", None)
    objclass = getattr(fn, "__objclass__", None)
    if module is None and objclass is not None:
        module = objclass.__module__
    if module is None and owner is not None:
        module = owner.__name__ if isinstance(owner, types.ModuleType) else type(owner).__module__
    module = (module or "").lstrip("_")
    return {"posix": "os", "nt": "os"}.get(module, module)


def lookup(fn: object) -> Annotation | None:
    """The annotation of a callable the monitor does not step into, if any."""
    if isinstance(fn, functools.partial):
        # ``partial(print, "[train]")`` is called as print is (one of the program's own
        # function is stepped into); no change through one can be replayed.
        found = lookup(fn.func)
        mutates = found is not None and found.mutates
        return dataclasses.replace(found, refuses="changes what it holds") if mutates else found
    if isinstance(fn, types.BuiltinFunctionType) and getattr(fn, "__self__", None) is builtins:
        return BUILTIN_FUNCTIONS.get(fn.__name__, UNKNOWN_NATIVE)
    receiver = getattr(fn, "__self__", None)
    name = getattr(fn, "__name__", "")
    # A bound builtin method (``xs.append``) or, after LOAD_METHOD, the unbound
    # descriptor (``list.append``) with the receiver as first argument.
    owner_type = getattr(fn, "__objclass__", None)
    if receiver is not None and not isinstance(receiver, types.ModuleType):
        owner_type = type(receiver)
    if isinstance(owner_type, type):
        for container_type in (list, dict, set, tuple, str, collections.deque):
            if issubclass(owner_type, container_type):
                found = CONTAINER_METHODS.get((container_type, name))
                if found is not None:
                    return found
    if owner_type is object or (
        receiver is not None and getattr(fn, "__objclass__", None) is object
    ):
        found = OBJECT_METHODS.get(name)
        if found is not None:
            return found
    if isinstance(fn, type) and fn.__module__ == "builtins":
        # zip, enumerate, reversed are types: their iteration annotations apply too.
        return BUILTIN_FUNCTIONS.get(fn.__name__, PURE)
    if isinstance(receiver, type) and receiver.__module__ == "builtins":
        return PURE  # tuple.__new__, dict.fromkeys, int.from_bytes ...
    if is_single_dispatch(fn):
        return READS_HIDDEN_STATE
    module = module_of(fn)
    qualified = f"{module}.{getattr(fn, '__qualname__', name)}"
    if not hasattr(fn, "__qualname__"):  # a library object called: its class's __call__
        qualified = f"{module}.{type(fn).__qualname__}.__call__"
    if qualified in FUNCTIONS:
        return FUNCTIONS[qualified]
    if module.startswith("torch") and _SETTER.match(name) and not isinstance(fn, type):
        return EFFECT  # ``torch.backends.cuda.enable_flash_sdp(False)``: replayed in order
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        found = MODULES.get(".".join(parts[:end]))
        if found is not None:
            return PURE if isinstance(fn, type) else found  # constructing a library object
    return None


def qualified_name(fn: object) -> str:
    """``module.qualname`` of a callable, for reports (``builtins.print``)."""
    module = module_of(fn) or "builtins"
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    receiver = getattr(fn, "__self__", None)
    if receiver is not None and not isinstance(receiver, types.ModuleType) and "." not in name:
        name = f"{type(receiver).__name__}.{name}"
    return f"{module}.{name}"
