"""Everything that depends on the CPython version, one module per version.

The monitor reads operands straight off the interpreter's value stack while a
``sys.settrace`` opcode event is being delivered.  ``py311``, ``py312`` and
``py313`` each hold their version's frame layout, where the top of the stack
is found during that event, the calling convention (where a CALL finds its
callable, self and arguments), what loads push, the stack effects the
symbolic tracking needs and the BINARY_OP table; ``_common`` what they share.
This package re-exports the running version's module.

Any other version, a free-threaded build and a build with another object
header (``Py_TRACE_REFS``) are refused with :class:`UnsupportedPythonError`
when ``compile``/``explain`` is called: reading another layout would give
silently wrong answers.  Importing the package works everywhere, so the
static rules, the CLI and the language server run on any Python 3.10+.
"""

from __future__ import annotations

import sys
import sysconfig

from fullgraph.runtime.cpython._common import (
    NB_OPS,
    NULL,
    StackDepthError,
    UnsupportedPythonError,
    free_var_index,
    handled_operands,
    handler_entry,
    is_real_opcode,
    nlocalsplus,
    static_depths,
)

SUPPORTED_VERSIONS = ((3, 11), (3, 12), (3, 13))

__all__ = [
    "BINARY_OPS",
    "BRANCH_OPS",
    "FORMAT_OPS",
    "KW_NAMES_OP",
    "NB_OPS",
    "NULL",
    "SUPPORTED_VERSIONS",
    "SYMBOLIC_LOADS",
    "VERSION",
    "StackDepthError",
    "UnsupportedPythonError",
    "call_ex_layout",
    "call_operands",
    "check_supported",
    "frame_function",
    "free_var_index",
    "handler_entry",
    "instructions",
    "loaded_depth",
    "nlocalsplus",
    "opcode_exists",
    "operands_read",
    "pops",
    "registers",
    "replace_stack_item",
    "stack_base",
    "stack_depth",
    "stack_item",
    "start_tracing",
    "static_depths",
    "stop_tracing",
    "trace_opcodes",
]

_RUNNING = tuple(sys.version_info[:2])
VERSION = _RUNNING

if _RUNNING == (3, 11):
    from fullgraph.runtime.cpython import py311 as _impl
elif _RUNNING == (3, 12):
    from fullgraph.runtime.cpython import py312 as _impl
elif _RUNNING == (3, 13):
    from fullgraph.runtime.cpython import py313 as _impl
else:
    _impl = None

if _impl is not None:
    instructions = _impl.instructions
    stack_depth = _impl.stack_depth
    stack_item = _impl.stack_item
    replace_stack_item = _impl.replace_stack_item
    frame_function = _impl.frame_function
    start_tracing = _impl.start_tracing
    stop_tracing = _impl.stop_tracing
    trace_opcodes = _impl.trace_opcodes
    loaded_depth = _impl.loaded_depth
    call_operands = _impl.call_operands
    call_ex_layout = _impl.call_ex_layout
    pops = _impl.pops
    KW_NAMES_OP = _impl.KW_NAMES_OP
    BRANCH_OPS = _impl.BRANCH_OPS
    SYMBOLIC_LOADS = _impl.SYMBOLIC_LOADS
    FORMAT_OPS = _impl.FORMAT_OPS
    BINARY_OPS = _impl.BINARY_OPS
    INTRINSIC_UNARY_POSITIVE = getattr(_impl, "INTRINSIC_UNARY_POSITIVE", None)
else:  # an interpreter without a reader: importable, never used (check_supported refuses it)

    def _unsupported(*args, **kwargs):
        check_supported()
        raise UnsupportedPythonError("fullgraph's monitor cannot read this interpreter's frames.")

    from fullgraph.runtime.cpython._common import instructions

    stack_depth = stack_item = replace_stack_item = frame_function = _unsupported
    start_tracing = stop_tracing = trace_opcodes = _unsupported
    loaded_depth = call_operands = call_ex_layout = pops = _unsupported
    KW_NAMES_OP = None
    BRANCH_OPS = SYMBOLIC_LOADS = FORMAT_OPS = frozenset()
    BINARY_OPS = {}
    INTRINSIC_UNARY_POSITIVE = None


def stack_base(code) -> int:
    """Number of localsplus slots (locals, cells, free vars) before the stack."""
    return nlocalsplus(code)


def _free_threaded() -> bool:
    gil_check = getattr(sys, "_is_gil_enabled", None)
    return bool(sysconfig.get_config_var("Py_GIL_DISABLED")) or (
        gil_check is not None and not gil_check()
    )


def _trace_refs() -> bool:
    return bool(sysconfig.get_config_var("Py_TRACE_REFS")) or hasattr(sys, "getobjects")


def check_supported(version_info=None) -> None:
    """Raise UnsupportedPythonError unless this interpreter can be monitored."""
    version_info = version_info or sys.version_info
    if sys.implementation.name != "cpython":
        raise UnsupportedPythonError(
            f"fullgraph's monitor needs CPython; this is {sys.implementation.name}."
        )
    version = tuple(version_info[:2])
    if version not in SUPPORTED_VERSIONS:
        supported = ", ".join(f"{a}.{b}" for a, b in SUPPORTED_VERSIONS)
        raise UnsupportedPythonError(
            f"fullgraph's monitor reads CPython's value stack and supports Python "
            f"{supported}; this is Python {version[0]}.{version[1]}. "
            "Run under a supported interpreter, or use torch.compile instead."
        )
    if _free_threaded():
        raise UnsupportedPythonError(
            f"fullgraph's monitor does not support free-threaded CPython builds "
            f"(this is Python {version[0]}.{version[1]} built with Py_GIL_DISABLED): "
            "their value stack holds tagged references and other threads may run "
            "while it is read. Use a default (GIL) build of CPython."
        )
    if _trace_refs():
        raise UnsupportedPythonError(
            "fullgraph's monitor does not support CPython built with Py_TRACE_REFS "
            "(its objects have a larger header, so the frame layout differs)."
        )
    if sys.maxsize <= 2**32:
        raise UnsupportedPythonError("fullgraph's monitor needs a 64-bit CPython build.")


def opcode_exists(name: str) -> bool:
    """Whether ``name`` is an instruction of the running interpreter (not a pseudo-op)."""
    return is_real_opcode(name)


def registers(name: str, since: tuple | None = None, until: tuple | None = None) -> bool:
    """Whether a handler for opcode ``name`` valid on versions [since, until] applies here.

    Inside its bounds the name must be a real opcode of the running version: a
    handler for a renamed or removed opcode fails loudly at import instead of
    silently never firing.  On an unsupported interpreter nothing registers.
    """
    if _impl is None:
        return False
    if since is not None and _RUNNING < tuple(since):
        return False
    if until is not None and _RUNNING > tuple(until):
        return False
    if not is_real_opcode(name):
        raise RuntimeError(
            f"a handler is registered for {name}, which is not an opcode of Python "
            f"{_RUNNING[0]}.{_RUNNING[1]}: give it version bounds"
        )
    return True


def operands_read(ins) -> int | None:
    """Stack slots ``ins`` reads (None: unknown), the handled opcodes included."""
    return handled_operands(ins) or pops(ins)
