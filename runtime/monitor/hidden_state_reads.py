"""Library calls whose result depends on state that is not among their arguments.

Most of the standard library is annotated pure by module (``annotation_table``):
the same arguments give the same result, so a record may keep the result.  The
functions named here read something else, which changes between calls without
any argument changing: the CUDA allocator, the environment and the file system,
a function's defaults behind its signature, the weak references to an object, the
decimal context, numpy's print and error settings.  Each is replayed on every
call (its result checked where it is read), and the ones that change such a
setting are effects, replayed in order.
"""

from __future__ import annotations

import decimal
import inspect
import sys
from typing import Any

from fullgraph.runtime.monitor import function_reads
from fullgraph.runtime.monitor.module_paths import module_source
from fullgraph.runtime.sources import AttrSource

HIDDEN_STATE_READS = frozenset(
    [
        # The CUDA allocator: changes with any allocation, so never a constant.
        *(
            f"torch.cuda.memory.{reading}"
            for reading in [
                "memory_allocated",
                "max_memory_allocated",
                "memory_reserved",
                "max_memory_reserved",
                "memory_stats",
                "memory_cached",
                "max_memory_cached",
            ]
        ),
        # The environment and the file system (their modules are effects, whose None
        # results go unchecked): replayed, their result checked, None included.
        *(
            f"{module}.{name}"
            for module, names in [
                ("os", ["getenv", "getenvb", "getcwd", "getpid", "cpu_count", "listdir", "stat"]),
                (
                    "posixpath",
                    ["exists", "lexists", "isfile", "isdir", "islink", "getsize", "getmtime"],
                ),
                (
                    "genericpath",
                    ["exists", "lexists", "isfile", "isdir", "islink", "getsize", "getmtime"],
                ),
            ]
            for name in names
        ),
        # What a class or function is now: its members and annotations.  (Signatures
        # stay pure, transformers asks for them inside forward: read_definition.)
        "inspect.getmembers",
        "typing.get_type_hints",
        # Weak references: what they reach, and how many there are.
        "weakref.getweakrefcount",
        "weakref.getweakrefs",
        # Context-local state.  (``ContextVar.get`` is replayed only where the
        # function did not set the variable itself: monitor/context_vars.py.)
        "decimal.getcontext",
        # numpy's process settings and what they format.
        "numpy.array2string",
        "numpy.array_repr",
        "numpy.array_str",
        "numpy.get_printoptions",
        "numpy.geterr",
        "torch.is_autocast_cache_enabled",
        # The KL function it calls is looked up by the two types in a registry that
        # ``register_kl`` extends between calls.
        "torch.distributions.kl.kl_divergence",
    ]
)

# Calls that change such a setting: effects, replayed in order.
SETTING_CHANGES = frozenset(
    [
        "numpy.set_printoptions",
        "numpy.seterr",
        "numpy.errstate",
        "decimal.setcontext",
        "decimal.localcontext",
    ]
)


# Calls whose result the guard could not follow: the run is not recorded.
REFUSED_CALLS = {
    "weakref.WeakMethod.__call__": "returns a bound method whose object has no path",
    "builtins.__import__": "returns a module the guard has no path to (an import statement has)",
    **{
        name: "reads the interpreter's frames (a replay runs in fullgraph's)"
        for name in [
            "inspect.currentframe",
            "inspect.stack",
            "inspect.getouterframes",
            "inspect.trace",
            "sys._getframe",
            "traceback.extract_stack",
            "traceback.format_stack",
            "traceback.print_stack",
        ]
    },
    "importlib.import_module": "returns a module the guard has no path to (an import statement has)",
    # Autograd modes that act on the backward pass of what runs inside them, which a
    # replay's graph (with its own saved tensors and nodes) does not reproduce.
    **{
        f"torch.autograd.{name}": "changes how autograd saves or checks what runs inside it"
        for name in [
            "graph.saved_tensors_hooks",
            "graph.save_on_cpu",
            "anomaly_mode.detect_anomaly",
            "forward_ad.dual_level",
        ]
    },
}


# Reads of process settings that no tensor operation changes (unlike the random
# state or the CUDA allocator's counters): the mock may make such a call in front of
# the graph it was made in, which then needs no split (transformers asks
# ``is_cuda_stream_capturing()`` in the middle of every attention mask).
SETTING_READS = frozenset(
    [
        "torch.get_num_threads",
        "torch.get_num_interop_threads",
        "torch.get_float32_matmul_precision",
        "torch.is_deterministic_algorithms_warn_only_enabled",
        "torch.get_deterministic_debug_mode",
        "torch.is_warn_always_enabled",
        "torch.get_default_device",
        "torch._C._is_multithreading_enabled",
        "torch._C._is_view_replay_enabled",
        "torch.cuda.current_device",
        "torch.cuda.get_sync_debug_mode",
        "torch.cuda.graphs.is_current_stream_capturing",
        # Switches and process state read through getters (sdpa_kernel() sets the first
        # four; a DataLoader worker, torchrun or init_process_group the last ones).
        "torch.backends.cuda.flash_sdp_enabled",
        "torch.backends.cuda.math_sdp_enabled",
        "torch.backends.cuda.mem_efficient_sdp_enabled",
        "torch.backends.cuda.cudnn_sdp_enabled",
        "torch.backends.mha.get_fastpath_enabled",
        "torch._C._get_nnpack_enabled",
        "torch.distributed.distributed_c10d.is_initialized",
        "torch.distributed.distributed_c10d.is_torchelastic_launched",
        "torch.utils.data._utils.worker.get_worker_info",
        "torch.sparse.check_sparse_tensor_invariants.is_enabled",
    ]
)


def is_single_dispatch(fn: object) -> bool:
    """A ``functools.singledispatch`` function: which implementation runs depends on
    its registry, which ``register`` changes between calls."""
    return all(hasattr(fn, name) for name in ("registry", "dispatch", "register"))


# Pure calls whose result follows a function's definition (its defaults, its code).
_DEFINITION_READERS = (inspect.signature, inspect.getfullargspec)


# Library switches that library Python reads without taking them as an argument:
# (module prefix of the callee, module holding the switch, path of the switch).
_LIBRARY_SWITCHES = (
    # Every distribution validates its arguments and samples unless told otherwise.
    ("torch.distributions", "torch.distributions.distribution", ("Distribution", "_validate_args")),
)


def read_definition(run: Any, fn: Any, args: tuple) -> None:
    """``inspect.signature(h)``: what it returns follows ``h``'s code and defaults (and
    those of the functions it wraps), so they are read as a call of ``h`` reads them."""
    if fn not in _DEFINITION_READERS or not args:
        return
    target = args[0]
    for _ in range(8):  # the __wrapped__ chain signature follows
        function_reads.read_function(run, target)
        target = getattr(target, "__wrapped__", None)
        if target is None or run.source_of(target) is None:
            return


def read_library_switches(run: Any, fn: Any) -> None:
    """A library call that reads one of the switches above: the switch is guarded."""
    module = getattr(fn, "__module__", None) or type(getattr(fn, "__self__", None)).__module__
    for prefix, holder, path in _LIBRARY_SWITCHES:
        if module.startswith(prefix) and holder in sys.modules:
            source = module_source(run, holder)
            value = sys.modules[holder]
            for name in path:
                source, value = AttrSource(source, name), getattr(value, name)
            run.read(source, value, symbolic=False)


def refuse_decimal_arithmetic(run: Any, *operands: Any) -> None:
    """``price * qty`` or ``-price`` on ``Decimal``s rounds by the thread's decimal
    context (``getcontext().prec``), which no argument carries and no guard checks."""
    if any(isinstance(operand, decimal.Decimal) for operand in operands):
        run.refuse(
            "Decimal arithmetic rounds by the thread's decimal context, which no guard checks"
        )
