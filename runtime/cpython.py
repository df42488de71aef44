"""Everything that depends on the CPython version: frame layout and opcodes.

The monitor reads operands straight off the interpreter's value stack while a
``sys.settrace`` opcode event is being delivered.  During that event CPython
3.11 has saved the stack pointer into the frame (``_PyFrame_SetStackPointer``
before ``maybe_call_line_trace``), so ``frame->f_frame->localsplus[n ..
stacktop)`` is exactly the live stack.  The struct offsets below are those of
CPython 3.11's ``PyFrameObject`` and ``_PyInterpreterFrame`` on 64-bit builds.

Any other version is refused with :class:`UnsupportedPythonError` at compile
time: reading another layout would give silently wrong answers.
"""

from __future__ import annotations

import ctypes
import dis
import functools
import sys
import types

SUPPORTED_VERSIONS = ((3, 11),)
_PTR = ctypes.sizeof(ctypes.c_void_p)
# PyFrameObject: ob_refcnt, ob_type, f_back, f_frame, ...
_F_FRAME_OFFSET = 3 * _PTR
# _PyInterpreterFrame: f_func, f_globals, f_builtins, f_locals, f_code,
# frame_obj, previous, prev_instr, then `int stacktop`, then localsplus[].
_F_FUNC_OFFSET = 0
_STACKTOP_OFFSET = 8 * _PTR
_LOCALSPLUS_OFFSET = 9 * _PTR


class UnsupportedPythonError(RuntimeError):
    """The running CPython has a frame layout the monitor cannot read."""


def check_supported(version_info=None) -> None:
    """Raise UnsupportedPythonError unless this interpreter can be monitored."""
    version_info = version_info or sys.version_info
    if sys.implementation.name != "cpython":
        raise UnsupportedPythonError(
            f"fullgraph's monitor needs CPython; this is {sys.implementation.name}."
        )
    if tuple(version_info[:2]) not in SUPPORTED_VERSIONS:
        supported = ", ".join(f"{a}.{b}" for a, b in SUPPORTED_VERSIONS)
        raise UnsupportedPythonError(
            f"fullgraph's monitor reads CPython's value stack and supports Python "
            f"{supported}; this is Python {version_info[0]}.{version_info[1]}. "
            "Run under a supported interpreter, or use torch.compile instead."
        )
    if _PTR != 8:
        raise UnsupportedPythonError("fullgraph's monitor needs a 64-bit CPython build.")


class _Null:
    """Stands for a NULL slot on the value stack (3.11 pushes them for calls)."""

    def __repr__(self) -> str:
        return "NULL"


NULL = _Null()


@functools.cache
def stack_base(code: types.CodeType) -> int:
    """Number of localsplus slots (locals, cells, free vars) before the stack."""
    cells = [c for c in code.co_cellvars if c not in code.co_varnames]
    return code.co_nlocals + len(cells) + len(code.co_freevars)


def _interp_frame(frame: types.FrameType) -> int:
    return ctypes.c_void_p.from_address(id(frame) + _F_FRAME_OFFSET).value


def stack_depth(frame: types.FrameType) -> int:
    """Live value-stack depth of ``frame`` (valid during a trace event only)."""
    top = ctypes.c_int.from_address(_interp_frame(frame) + _STACKTOP_OFFSET).value
    return top - stack_base(frame.f_code)


def stack_item(frame: types.FrameType, depth_from_top: int):
    """The value ``depth_from_top`` slots below the top (0 = TOS); NULL for empty slots."""
    iframe = _interp_frame(frame)
    top = ctypes.c_int.from_address(iframe + _STACKTOP_OFFSET).value
    index = top - 1 - depth_from_top
    if index < stack_base(frame.f_code):
        raise IndexError("stack underflow")
    pointer = ctypes.c_void_p.from_address(iframe + _LOCALSPLUS_OFFSET + index * _PTR).value
    if not pointer:
        return NULL
    return ctypes.cast(pointer, ctypes.py_object).value


def replace_stack_item(frame: types.FrameType, depth_from_top: int, value) -> None:
    """Put ``value`` in a value-stack slot (used to hand a call an already-known result).

    The slot owns a reference: ``value`` is increfed, the old object decrefed
    (the caller keeps the old object alive anyway).
    """
    iframe = _interp_frame(frame)
    top = ctypes.c_int.from_address(iframe + _STACKTOP_OFFSET).value
    index = top - 1 - depth_from_top
    if index < stack_base(frame.f_code):
        raise IndexError("stack underflow")
    slot = ctypes.c_void_p.from_address(iframe + _LOCALSPLUS_OFFSET + index * _PTR)
    old = slot.value
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(value))
    slot.value = id(value)
    if old:
        ctypes.pythonapi.Py_DecRef(ctypes.cast(old, ctypes.py_object))


def frame_function(frame: types.FrameType):
    """The function object executing in ``frame`` (None for module/class bodies)."""
    pointer = ctypes.c_void_p.from_address(_interp_frame(frame) + _F_FUNC_OFFSET).value
    if not pointer:
        return None
    fn = ctypes.cast(pointer, ctypes.py_object).value
    return fn if isinstance(fn, types.FunctionType) else None


@functools.cache
def instructions(code: types.CodeType) -> dict[int, dis.Instruction]:
    """Instructions of ``code`` by byte offset (what ``frame.f_lasti`` gives)."""
    return {ins.offset: ins for ins in dis.get_instructions(code)}


def free_var_index(code: types.CodeType, oparg: int) -> int | None:
    """Index into ``fn.__closure__`` for LOAD_DEREF/STORE_DEREF's oparg, if free."""
    first_free = stack_base(code) - len(code.co_freevars)
    index = oparg - first_free
    return index if 0 <= index < len(code.co_freevars) else None


def global_name(ins: dis.Instruction) -> str:
    return ins.argval


def opcode_exists(name: str) -> bool:
    return name in dis.opmap


# Opcodes whose jump depends on the truth of TOS.
BRANCH_OPS = frozenset(
    name
    for name in (
        "POP_JUMP_FORWARD_IF_TRUE",
        "POP_JUMP_FORWARD_IF_FALSE",
        "POP_JUMP_BACKWARD_IF_TRUE",
        "POP_JUMP_BACKWARD_IF_FALSE",
        "JUMP_IF_TRUE_OR_POP",
        "JUMP_IF_FALSE_OR_POP",
    )
    if name in dis.opmap
)
